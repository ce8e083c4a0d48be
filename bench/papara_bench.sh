#!/bin/bash
# duet papara against PaPaRa 2.5 on the GPU machine, in one call: builds duet with CUDA and
# the kernel benchmarks, runs the papara tests (`ctest -R Papara`, GPU ones included), the
# kernel-only rates (CPU per core for each ISA, GPU), then whole processes side by side on
# the INDELible references of bench/papara_data.sh (carried gzipped in
# .device/papara_bench/papara_T/): duet --no-gpu, --gpu-only and the default (hybrid) on
# READS_T reads, whose alignment files must be identical, and PaPaRa 2.5 (`papara -j 16`,
# built outside the project: .device/papara, see tests/data/papara/README.md) against
# duet --no-gpu on the first PAPARA_READS_T reads, whose alignment files must be identical
# too. Cells are PaPaRa's count, edges x columns x query residues.
# SIZES (default "500 5000") picks the references; "500aa" is a 500-taxon protein reference
# (tests/data/papara/papara_sim.py --protein --seed 507 --taxa 500 --sources 166 --cols 600
# --reads 4000 --read-min 40 --read-max 60 --bl-min 0.005 --bl-max 0.08 --indel-rate 0.005),
# run with -a by both tools.
# Writes times.tsv and logs under $OUT. ROUNDS (default 2); TESTS=no skips the tests.
set -uo pipefail
rounds=${ROUNDS:-2}
source bench/device_env.sh
papara=${PAPARA:-$PWD/.device/papara}
t0=$(date +%s)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=ON > "$out/cmake.log" 2>&1 ||
  { tail -30 "$out/cmake.log"; exit 1; }
targets="duet papara_kernel_bench"
[ "${TESTS:-yes}" = yes ] && targets="$targets papara_tests papara_gpu_tests"
cmake --build build-dev -j16 --target $targets papara_gpu_bench > "$out/build.log" 2>&1 ||
  { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
duet=$PWD/build-dev/duet
if [ "${TESTS:-yes}" = yes ]; then
  ctest --test-dir build-dev -R Papara -j8 > "$out/ctest_papara.txt" 2>&1; tail -3 "$out/ctest_papara.txt"
fi
./build-dev/bench/papara_kernel_bench > "$out/cpu_kernels.txt" 2>&1; cat "$out/cpu_kernels.txt"
./build-dev/bench/papara_gpu_bench > "$out/gpu_kernel.txt" 2>&1; cat "$out/gpu_kernel.txt"
work=/tmp/papara-bench; rm -rf $work; mkdir -p $work
printf "case\tround\tseconds\tcells\n" > "$out/times.tsv"
time_it() {  # name, folder, command...: wall seconds and the cells duet's summary gives
  local name=$1 dir=$2; shift 2
  local s=$(date +%s%N)
  (cd "$dir" && "$@") > "$work/$name.log" 2>&1 || echo "$name failed: $(tail -2 "$work/$name.log")"
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  [ -f "$work/$name.sum" ] && cat "$work/$name.sum" >> "$work/$name.log" && rm "$work/$name.sum"
  local cells=$(grep -o '[0-9.e+]* cells' "$work/$name.log" | head -1 | cut -d' ' -f1)
  printf "%s\t%s\t%d.%03d\t%s\n" "$name" "$round" $((ms / 1000)) $((ms % 1000)) "${cells:--}" | tee -a "$out/times.tsv"
}
same() {  # two files
  cmp -s "$1" "$2" && echo "identical: $1 $2" || echo "DIFFERENT: $1 $2"
}
for t in ${SIZES:-500 5000}; do
  d=$work/papara_$t; mkdir -p $d
  for f in ref.tre ref.phy queries.fa; do zcat .device/papara_bench/papara_$t/$f.gz > $d/$f; done
  case $t in
    500) reads=${READS_500:-10000} sub=${PAPARA_READS_500:-2000} protein="" ;;
    5000) reads=${READS_5000:-2000} sub=${PAPARA_READS_5000:-200} protein="" ;;
    *aa) reads=${READS_AA:-4000} sub=${PAPARA_READS_AA:-4000} protein="-a" ;;
  esac
  awk -v n=$reads '/^>/{k++} k<=n' $d/queries.fa > $d/q_all.fa
  awk -v n=$sub '/^>/{k++} k<=n' $d/queries.fa > $d/q_sub.fa
  args="-t $d/ref.tre -s $d/ref.phy --quiet $protein"
  for round in $(seq $rounds); do
    time_it "T$t-cpu" $d $duet papara $args -q $d/q_all.fa --no-gpu -o $work/T$t-cpu.sum --alignment $d/cpu.phy --h5 $d/cpu.h5
    time_it "T$t-gpu-only" $d $duet papara $args -q $d/q_all.fa --gpu-only -o $work/T$t-gpu-only.sum --alignment $d/gpu.phy --h5 $d/gpu.h5
    time_it "T$t-hybrid" $d $duet papara $args -q $d/q_all.fa -o $work/T$t-hybrid.sum --alignment $d/hybrid.phy --h5 $d/hybrid.h5
    time_it "T$t-sub-duet-cpu" $d $duet papara $args -q $d/q_sub.fa --no-gpu -o $work/T$t-sub-duet-cpu.sum --alignment $d/sub_duet.phy --h5 $d/sub.h5
    rm -f $d/papara_*.r$round
    time_it "T$t-sub-papara16" $d $papara -t ref.tre -s ref.phy -q q_sub.fa -j 16 -n r$round $protein
  done
  for log in cpu gpu-only hybrid sub-duet-cpu; do cp $work/T$t-$log.log "$out/T$t-$log.txt"; done
  grep -h "gncup\|scoring finished\|SUCCESS" $d/papara_log.r1 > "$out/T$t-papara-log.txt" 2>/dev/null
  same $d/cpu.phy $d/gpu.phy; same $d/cpu.phy $d/hybrid.phy; same $d/sub_duet.phy $d/papara_alignment.r1
done
