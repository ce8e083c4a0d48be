#!/bin/bash
# The shape of a many-model pass on the GPU machine: MODELS (default 1,000) Pfam-like
# models against a synthetic proteome (as bench/many_models.sh, PROTEOME=synth), or with
# DB=big against the MMseqs2 examples 10 times (90 M residues), duet in several modes
# (with DB=synth also fewer models per pass, DUET_DEBUG_MODELS_PER_PASS, and smaller
# blocks), beside 16 x hmmsearch --cpu 1 (the models split 16 ways), in ROUNDS (default 2).
# /results of every variant are compared with --no-gpu's. Run from the source root with
# .device carried; writes times.tsv and each variant's DUET_TIMES under $OUT (shape.tgz).
set -uo pipefail
rounds=${ROUNDS:-2}
source bench/device_env.sh
source bench/many_models_common.sh
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-dev -j16 --target duet > "$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
duet=./build-dev/duet
work=/tmp/shape; mkdir -p $work
synth_models $duet $work ${MODELS:-1000}
if [ "${DB:-synth}" = big ]; then
  zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz > $work/db1.fa
  for i in $(seq 10); do cat $work/db1.fa; done > $work/proteome.fa
else
  $duet synth-db --residues 2.26e6 --homologs 0.002 --model $work/models.hmm --seed 7 -o $work/proteome.fa > /dev/null
fi
split_models $work
printf "variant\tround\tseconds\n" > "$out/times.tsv"
variant() {  # name, models per pass (0: default), duet options...
  local name=$1 per_pass=$2; shift 2
  for round in $(seq $rounds); do
    local s=$(date +%s%N)
    DUET_DEBUG_MODELS_PER_PASS=$per_pass $duet hmmsearch --quiet --h5 $work/$name.h5 "$@" \
      $work/models.hmm $work/proteome.fa > $work/$name.log 2>&1 || echo "$name failed: $(tail -2 $work/$name.log)"
    local ms=$(( ($(date +%s%N) - s) / 1000000 ))
    printf "%s\t%s\t%d.%03d\n" "$name" "$round" $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
  done
  DUET_TIMES=1 DUET_DEBUG_MODELS_PER_PASS=$per_pass $duet hmmsearch --quiet --h5 $work/$name.h5 "$@" \
    $work/models.hmm $work/proteome.fa 2> "$out/$name-times.txt" > /dev/null
  [ "$name" = cpu ] || echo "$name: $(python3 bench/compare_results.py $work/cpu.h5 $work/$name.h5 2>&1 | tail -1)"
}
hmmer16() {  # HMMER_ROUNDS (default ROUNDS) rounds
  for round in $(seq ${HMMER_ROUNDS:-$rounds}); do
    local s=$(date +%s%N)
    for i in $(seq 0 15); do hmmsearch --cpu 1 -o /dev/null $work/part$i.hmm $work/proteome.fa & done; wait
    local ms=$(( ($(date +%s%N) - s) / 1000000 ))
    printf "%s\t%s\t%d.%03d\n" hmmer16 "$round" $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
  done
}
variant cpu 0 --no-gpu
variant gpu 0 --gpu-only
variant forced 0 --gpu-min-database 0
if [ "${DB:-synth}" = big ]; then
  variant default 0
else
  variant gpu-small-blocks 0 --gpu-only --block-residues 250000
  variant forced-small-blocks 0 --gpu-min-database 0 --block-residues 250000
  variant gpu-32-per-pass 32 --gpu-only
fi
hmmer16
# One file back (the device call returns a few files only).
tar -C "$out" -czf "$out/shape.tgz" $(cd "$out" && ls *-times.txt times.tsv)
