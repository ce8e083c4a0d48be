#!/usr/bin/env bash
# Pair-HMM CPU kernels per core (issue 7), before and after, in one device call: builds this
# tree and a reference tree (CPU only), runs the pair-HMM tests of this tree, then in
# alternating rounds `duet pairhmm --no-gpu --cpu 1 --isa {avx2,avx512}` on 10s.in and on 64
# concatenated copies (x64) with both builds, pairhmm_cpu_bench (kernel only, every variant)
# where the tree has it, all cores on x64, and compares the results of the two builds.
# Usage: bash bench/pairhmm_cpu_core.sh SETUP DATA REFERENCE_TREE [ROUNDS]
#   SETUP: .device/setup.sh, DATA: folder with pairhmm/, REFERENCE_TREE: the tree to compare with
set -u
setup=$1 data=$(cd "$2" && pwd) ref=$(cd "$3" && pwd) rounds=${4:-3}
out=${OUT:-/tmp/out}
mkdir -p "$out"
log=$out/log.txt
# shellcheck disable=SC1090
source "$setup"
export PATH=/opt/deps/usr/bin:$PATH
date -u | tee "$log"
lscpu | grep -E 'Model name|^CPU\(s\)|Thread|MHz|L2|L3' | tee -a "$log"
for t in new ref; do
  [ -n "${SKIP_BUILD:-}" ] && break  # builds already in /tmp/b-new and /tmp/b-ref
  src=.
  [ $t = ref ] && src=$ref
  targets="duet"
  [ -f "$src/bench/pairhmm_cpu_bench.cpp" ] && targets="$targets pairhmm_cpu_bench"
  [ $t = new ] && targets="$targets pairhmm_tests"
  { cmake -S "$src" -B /tmp/b-$t -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_ENABLE_CUDA=OFF \
      -DDUET_SHARED_DATA="$data" && cmake --build /tmp/b-$t -j16 --target $targets; } > "$out/build-$t.log" 2>&1 ||
    { grep -B2 -A8 error "$out/build-$t.log" | head -40 | tee -a "$log"; exit 1; }
done
echo "== pairhmm_tests (this tree)" | tee -a "$log"
/tmp/b-new/tests/pairhmm_tests --gtest_brief=1 2>&1 | tail -4 | tee -a "$log"
x64=/tmp/x64.in
for _ in $(seq 64); do cat "$data/pairhmm/10s.in"; done > "$x64"
echo "== duet pairhmm --no-gpu --cpu 1 (GCUPS overall)" | tee -a "$log"
for r in $(seq "$rounds"); do
  for t in ref new; do
    for isa in avx2 avx512; do
      for in in "$data/pairhmm/10s.in" "$x64"; do
        g=$(/tmp/b-$t/duet pairhmm --no-gpu --cpu 1 --isa $isa --h5 /tmp/c-$t-$isa.h5 "$in" | awk '/GCUPS/{print $4}')
        echo "round $r $t $isa $(basename "$in") $g" | tee -a "$log"
      done
    done
  done
done
echo "== pairhmm_cpu_bench 10s.in --copies 4 (kernel only, thread CPU time)" | tee -a "$log"
for r in 1 2; do
  for t in ref new; do
    [ -x /tmp/b-$t/bench/pairhmm_cpu_bench ] || continue
    /tmp/b-$t/bench/pairhmm_cpu_bench "$data/pairhmm/10s.in" --copies 4 --repeats 5 2>&1 |
      grep -v '^#' | sed "s/^/round $r $t /" | tee -a "$log"
  done
done
echo "== duet pairhmm --no-gpu, all cores, x64" | tee -a "$log"
for t in ref new; do
  for isa in avx2 avx512; do
    g=$(/tmp/b-$t/duet pairhmm --no-gpu --isa $isa --h5 /tmp/a-$t-$isa.h5 "$x64" | awk '/GCUPS/{print $4}')
    echo "$t $isa x64 $g" | tee -a "$log"
  done
done
echo "== results, this tree against the reference (x64, 1 core)" | tee -a "$log"
for isa in avx2 avx512; do
  python3 bench/compare_results.py /tmp/c-ref-$isa.h5 /tmp/c-new-$isa.h5 2>&1 | tail -2 | tee -a "$log"
done
date -u | tee -a "$log"
