#!/bin/bash
# A refactoring's cost on the GPU machine: the source tree and a baseline source tree built
# side by side (both with CUDA), `ctest -L gpu` on the source tree, then the same runs with
# both binaries in alternating rounds, whole processes timed, and /results compared
# between the two builds (a refactoring must not change them):
#   - hmmsearch `many` (MODELS synthetic Pfam-like models against a synthetic proteome of
#     2.26 M residues, as bench/many_models.sh) and `one` (Pkinase against the MMseqs2
#     examples 10 times): --no-gpu, --gpu-only and --gpu-min-database 0 (the hybrid);
#   - pairhmm on 64 copies of the shared 10s.in: --no-gpu, --gpu-only and the hybrid.
# Usage, from the source root with .device carried and the baseline unpacked under it:
#   git archive <rev> | (mkdir -p .device/baseline && tar -x -C .device/baseline)
#   OUT=$OUT BASELINE=.device/baseline bash bench/compare_builds.sh
# Writes times.tsv (case, build, round, seconds) and the comparisons under $OUT.
set -uo pipefail
models=${MODELS:-1000}; rounds=${ROUNDS:-2}; baseline=${BASELINE:?BASELINE: the baseline source tree}
source bench/device_env.sh
build() {  # source folder, build folder, targets
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF \
    ${DUET_SHARED_DATA:+-DDUET_SHARED_DATA=$DUET_SHARED_DATA} > "$out/cmake-$(basename $2).log" 2>&1 &&
    cmake --build "$2" -j16 --target $3 > "$out/build-$(basename $2).log" 2>&1 ||
    { grep -B2 -A8 error "$out/build-$(basename $2).log" | head -40; exit 1; }
}
t0=$(date +%s)
build . build-dev all
build "$baseline" build-base duet
echo "builds: $(( $(date +%s) - t0 )) s"
ctest --test-dir build-dev -L gpu -j4 > "$out/ctest_gpu.txt" 2>&1; tail -3 "$out/ctest_gpu.txt"
new=./build-dev/duet; old=./build-base/duet
work=/tmp/compare; mkdir -p $work
lengths=$(python3 -c "
import random; random.seed(7)
print(' '.join('-L %d' % max(20, min(1200, int(random.lognormvariate(5.14, 0.6)))) for _ in range($models)))")
$new synth-model $lengths --seed 7 -o $work/models.hmm > /dev/null
$new synth-db --residues 2.26e6 --homologs 0.002 --model $work/models.hmm --seed 7 \
  -o $work/proteome.fa > /dev/null
zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > $work/db1.fa
for i in $(seq 10); do cat $work/db1.fa; done > $work/db10.fa
pairs=${DUET_SHARED_DATA:-.device/data}/pairhmm/10s.in
for i in $(seq 64); do cat "$pairs"; done > $work/pairs64.in
printf "case\tbuild\tround\tseconds\n" > "$out/times.tsv"
time_it() {  # case, build, command...
  local name=$1 which=$2; shift 2
  local s=$(date +%s%N)
  "$@" > "$work/$name-$which.log" 2>&1 || echo "$name $which failed: $(tail -2 "$work/$name-$which.log")"
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf "%s\t%s\t%s\t%d.%03d\n" "$name" "$which" "$round" $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
}
same() {  # case: the two builds' /results
  python3 bench/compare_results.py $work/$1-old.h5 $work/$1-new.h5 > "$out/$1-compare.txt" 2>&1
  echo "$1: $(tail -1 "$out/$1-compare.txt")"
}
for round in $(seq $rounds); do
  for which in old new; do
    duet=${!which}
    for c in "many $work/models.hmm $work/proteome.fa" \
             "one /usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm $work/db10.fa"; do
      set -- $c
      time_it $1-cpu $which $duet hmmsearch --quiet --no-gpu --h5 $work/$1-cpu-$which.h5 $2 $3
      time_it $1-gpu-only $which $duet hmmsearch --quiet --gpu-only --h5 $work/$1-gpu-only-$which.h5 $2 $3
      time_it $1-hybrid $which $duet hmmsearch --quiet --gpu-min-database 0 --h5 $work/$1-hybrid-$which.h5 $2 $3
    done
    time_it pairhmm-cpu $which $duet pairhmm --quiet --no-gpu --h5 $work/pairhmm-cpu-$which.h5 $work/pairs64.in
    time_it pairhmm-gpu-only $which $duet pairhmm --quiet --gpu-only --h5 $work/pairhmm-gpu-only-$which.h5 $work/pairs64.in
    time_it pairhmm-hybrid $which $duet pairhmm --quiet --h5 $work/pairhmm-hybrid-$which.h5 $work/pairs64.in
  done
done
for c in many one pairhmm; do for m in cpu gpu-only hybrid; do same $c-$m; done; done
