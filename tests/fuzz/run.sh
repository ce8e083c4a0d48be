#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz and runs each for
# SECONDS seconds, starting from its seed corpus tests/fuzz/<target>/ copied to a scratch
# folder (the repository's corpus is not changed). Fails when any target finds a crash,
# a sanitizer report, an exception other than duet's documented ones, a broken promise
# or a hang (-timeout); the input that did it is kept in build-fuzz/artifacts/.
#   tests/fuzz/run.sh SECONDS [TARGET...]    (default: every target, 60 s each)
#   DUET_FUZZ_JOBS   build jobs (default: all cores)
# One summary line per target: seconds, executions, corpus files at the end, result.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true
all=(hmm fasta block_reader config kernel_table pairhmm)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi

if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDUET_FUZZ=ON -DDUET_ENABLE_CUDA=OFF -DDUET_BUILD_BENCH=OFF -DBUILD_TESTING=OFF >/dev/null
fi
cmake --build build-fuzz -j "${DUET_FUZZ_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"

mkdir -p build-fuzz/artifacts
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=()
summary=()
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t/corpus" "$scratch/$t/tmp"
  cp tests/fuzz/"$t"/* "$scratch/$t/corpus/"
  dict=()
  [ -f tests/fuzz/"$t".dict ] && dict=(-dict=tests/fuzz/"$t".dict)
  echo "fuzz: $t for $seconds s" >&2
  status=0
  TMPDIR="$scratch/$t/tmp" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    build-fuzz/tests/fuzz/fuzz_"$t" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/"$t"- \
    "$scratch/$t/corpus" >"$scratch/$t/log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/$t/log" | grep -o '[0-9]*$' || echo "?")
  files=$(find "$scratch/$t/corpus" -type f | wc -l)
  if [ "$status" -ne 0 ]; then
    failed+=("$t")
    tail -n 60 "$scratch/$t/log" >&2
    summary+=("$t: $seconds s, $runs executions, $files corpus files, FAILED (exit $status; input in build-fuzz/artifacts/)")
  else
    summary+=("$t: $seconds s, $runs executions, $files corpus files, no crash")
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
