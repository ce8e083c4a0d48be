#!/bin/bash
# Many models and one model on the GPU machine, in one call: builds duet with CUDA, runs
# `ctest -L gpu`, then times whole processes side by side (each case in rounds) against
# HMMER's strongest arrangement here, 16 single-thread hmmsearch processes with the work
# split evenly: duet --no-gpu, --gpu-only, the default mode (CPU only below
# --gpu-min-database) and the hybrid forced (--gpu-min-database 0), whose /results
# must be identical (bench/compare_results.py), and 16 x hmmsearch --cpu 1.
#   - many: MODELS (default 1000) models from duet synth-model with a Pfam-like length
#     spread (log-normal, median about 170, 20 to 1200) against a proteome (the first 5,000
#     sequences of the MMseqs2 example database, 2.26 M residues; PROTEOME=synth: duet
#     synth-db of that size); HMMER gets the models split 16 ways.
#   - one: Pkinase against the MMseqs2 examples 10 times (90 M residues); HMMER gets the
#     database split 16 ways.
# Run from the source root with .device carried (shared/device/README.md;
# fetch-debs.sh .device hmmer libdivsufsort3 hmmer-examples mmseqs2-examples).
# Writes times.tsv, the build and test logs under $OUT, and the phases and comparisons in
# $OUT/details.tgz (a device call returns 8 files at most). ROUNDS (default 2); TESTS=no
# skips the tests.
set -uo pipefail
models=${MODELS:-1000}; rounds=${ROUNDS:-2}
source bench/device_env.sh
source bench/many_models_common.sh
t0=$(date +%s)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF \
  ${DUET_SHARED_DATA:+-DDUET_SHARED_DATA=$DUET_SHARED_DATA} > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
targets="duet"; [ "${TESTS:-yes}" = yes ] && targets="all"
cmake --build build-dev -j16 --target $targets > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
duet=./build-dev/duet
if [ "${TESTS:-yes}" = yes ]; then
  ctest --test-dir build-dev -L gpu -j4 > "$out/ctest_gpu.txt" 2>&1; tail -3 "$out/ctest_gpu.txt"
fi
work=/tmp/many; mkdir -p $work
synth_models $duet $work $models
if [ "${PROTEOME:-real}" = synth ]; then
  # A synthetic proteome of the same size (duet synth-db: few homologs, as in a search
  # whose cost is the filters).
  $duet synth-db --residues 2.26e6 --homologs 0.002 --model $work/models.hmm --seed 7 \
    -o $work/proteome.fa > /dev/null
else
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz | awk '/^>/{n++} n<=5000' > $work/proteome.fa
fi
split_models $work
printf "case\tround\tseconds\n" > "$out/times.tsv"
hmmer16_db() {  # model, database prefix: the database split 16 ways
  for i in $(seq 0 15); do
    hmmsearch --cpu 1 -o /dev/null --tblout $work/hmmer$i.tbl "$1" "$2.$i" &
  done
  wait
}
compare() {  # label: the duet runs of a case give the same /results
  python3 bench/compare_results.py $work/cpu.h5 $work/gpu.h5 > "$out/$1-compare-gpu.txt" 2>&1; tail -1 "$out/$1-compare-gpu.txt"
  python3 bench/compare_results.py $work/cpu.h5 $work/hybrid.h5 > "$out/$1-compare-hybrid.txt" 2>&1; tail -1 "$out/$1-compare-hybrid.txt"
  python3 bench/compare_results.py $work/cpu.h5 $work/forced.h5 > "$out/$1-compare-forced.txt" 2>&1; tail -1 "$out/$1-compare-forced.txt"
}
run_case() {  # label, models, database, HMMER's arrangement (hmmer16 or hmmer16_db), its arguments
  local label=$1 hmm=$2 db=$3 reference=$4; shift 4
  for round in $(seq $rounds); do
    time_it "$label-cpu" $duet hmmsearch --quiet --no-gpu --h5 $work/cpu.h5 "$hmm" "$db"
    time_it "$label-gpu-only" $duet hmmsearch --quiet --gpu-only --h5 $work/gpu.h5 "$hmm" "$db"
    time_it "$label-hybrid" $duet hmmsearch --quiet --h5 $work/hybrid.h5 "$hmm" "$db"
    time_it "$label-hybrid-forced" $duet hmmsearch --quiet --gpu-min-database 0 --h5 $work/forced.h5 "$hmm" "$db"
    time_it "$label-hmmer16" $reference "$@"
  done
  # Where a CPU-only run's time goes (DUET_TIMES: phases, CPU seconds by thread kind).
  DUET_TIMES=1 $duet hmmsearch --quiet --no-gpu --h5 $work/cpu.h5 "$hmm" "$db" 2> "$out/$label-phases.txt"
  # ... and a GPU-only run's (DUET_TIMES also gives each GPU feeder's time by step).
  DUET_TIMES=1 $duet hmmsearch --quiet --gpu-only --h5 $work/gpu.h5 "$hmm" "$db" \
    2> "$out/$label-gpu-phases.txt"
  compare "$label"
}
run_case many $work/models.hmm $work/proteome.fa hmmer16 $work/proteome.fa
# One model against a large database: Pkinase, the MMseqs2 examples 10 times (90 M
# residues), HMMER on the database split 16 ways.
zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > $work/db1.fa
for i in $(seq 10); do cat $work/db1.fa; done > $work/db10.fa
awk -v p=$work/db10.fa '/^>/{n++} {print > (p "." (n % 16))}' $work/db10.fa
run_case one /usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm $work/db10.fa hmmer16_db \
  /usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm $work/db10.fa
# The per-case files in one archive.
details=$(cd "$out" && ls many-*.txt one-*.txt 2>/dev/null)
[ -n "$details" ] && tar -C "$out" -czf "$out/details.tgz" $details && (cd "$out" && rm -f $details)
