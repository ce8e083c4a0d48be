#!/bin/bash
# Many models against one database on the GPU machine, in one call: builds duet with CUDA,
# runs the GPU tests, then times whole processes side by side (each case in rounds,
# alternating) against HMMER's strongest arrangement on this machine, 16 single-thread
# hmmsearch processes with the models split evenly:
#   - duet --no-gpu, a pass per group of models (the default);
#   - duet --no-gpu with DUET_DEBUG_MODELS_PER_PASS=1, a pass per model (the design before);
#   - duet's default mode (the GPU, a pass per model);
#   - 16 x hmmsearch --cpu 1.
# Models: duet synth-model with a Pfam-like length spread (log-normal, median about 170,
# 20 to 1200). Databases: a proteome (the first 5,000 sequences of the MMseqs2 example
# database, 2.26 M residues; PROTEOME=synth: duet synth-db of that size) and, with BIG=1,
# 95 M residues (the example database 10 times) with 50 models.
# Run from the source root with .device carried (shared/device/README.md;
# fetch-debs.sh .device hmmer libdivsufsort3 hmmer-examples mmseqs2-examples).
# Writes logs and times.tsv under $OUT. MODELS (default 1000), ROUNDS (default 2).
set -uo pipefail
models=${MODELS:-1000}; rounds=${ROUNDS:-2}
source bench/device_env.sh
t0=$(date +%s)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF \
  ${DUET_SHARED_DATA:+-DDUET_SHARED_DATA=$DUET_SHARED_DATA} > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
targets="duet"; [ "${TESTS:-yes}" = yes ] && targets="duet gpu_tests pairhmm_gpu_tests"
cmake --build build-dev -j16 --target $targets > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
duet=./build-dev/duet
if [ "${TESTS:-yes}" = yes ]; then
  { ./build-dev/tests/gpu_tests --gtest_brief=1 2>&1 | tail -3
    ./build-dev/tests/pairhmm_gpu_tests --gtest_brief=1 2>&1 | tail -3; } | tee "$out/gpu_tests.txt"
fi
work=/tmp/many; mkdir -p $work
lengths=$(python3 -c "
import random; random.seed(7)
print(' '.join('-L %d' % max(20, min(1200, int(random.lognormvariate(5.14, 0.6)))) for _ in range($models)))")
$duet synth-model $lengths --seed 7 -o $work/models.hmm > /dev/null
if [ "${PROTEOME:-real}" = synth ]; then
  # A synthetic proteome of the same size (duet synth-db: few homologs, as in a search
  # whose cost is the filters).
  $duet synth-db --residues 2.26e6 --homologs 0.002 --model $work/models.hmm --seed 7 \
    -o $work/proteome.fa > /dev/null
else
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz | awk '/^>/{n++} n<=5000' > $work/proteome.fa
fi
# The models split 16 ways for the HMMER processes.
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
models = [m for m in open(w + "/models.hmm").read().split("//\n") if m.strip()]
for i in range(16):
    open(f"{w}/part{i}.hmm", "w").write("".join(m + "//\n" for m in models[i::16]))
PY
printf "case\tround\tseconds\n" > "$out/times.tsv"
time_it() {  # name, command...
  local name=$1; shift
  local s=$(date +%s%N)
  "$@" > "$work/$name.log" 2>&1 || echo "$name failed: $(tail -2 "$work/$name.log")"
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf "%s\t%s\t%d.%03d\n" "$name" "$round" $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
}
hmmer16() {  # database
  for i in $(seq 0 15); do
    hmmsearch --cpu 1 -o /dev/null --tblout $work/hmmer$i.tbl $work/part$i.hmm "$1" &
  done
  wait
}
run_case() {  # label, database
  local label=$1 db=$2
  for round in $(seq $rounds); do
    time_it "$label-grouped" $duet hmmsearch --quiet --no-gpu -o $work/grouped.h5 $work/models.hmm "$db"
    time_it "$label-per-model" env DUET_DEBUG_MODELS_PER_PASS=1 $duet hmmsearch --quiet --no-gpu \
      -o $work/permodel.h5 $work/models.hmm "$db"
    time_it "$label-default" $duet hmmsearch --quiet -o $work/default.h5 $work/models.hmm "$db"
    time_it "$label-hmmer16" hmmer16 "$db"
  done
  # Where a grouped run's time goes (DUET_TIMES: phases, CPU seconds by thread kind).
  DUET_TIMES=1 $duet hmmsearch --quiet --no-gpu -o $work/grouped.h5 $work/models.hmm "$db" \
    2> "$out/$label-phases.txt"
  # The three duet runs give the same /results.
  python3 bench/compare_results.py $work/grouped.h5 $work/permodel.h5 > "$out/$label-compare1.txt" 2>&1; tail -1 "$out/$label-compare1.txt"
  python3 bench/compare_results.py $work/grouped.h5 $work/default.h5 > "$out/$label-compare2.txt" 2>&1; tail -1 "$out/$label-compare2.txt"
}
run_case proteome $work/proteome.fa
if [ "${BIG:-0}" = 1 ]; then
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > $work/db1.fa
  for i in $(seq 10); do cat $work/db1.fa; done > $work/db10.fa
  python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
models = [m for m in open(w + "/models.hmm").read().split("//\n") if m.strip()][:50]
open(w + "/models.hmm", "w").write("".join(m + "//\n" for m in models))
for i in range(16):
    open(f"{w}/part{i}.hmm", "w").write("".join(m + "//\n" for m in models[i::16]))
PY
  run_case big50 $work/db10.fa
fi
