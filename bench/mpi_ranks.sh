#!/bin/bash
# duet hmmsearch under mpirun on one host (issue 22): 1, 2, 4 and 8 ranks with the cores
# split among them (`--bind-to none`; each rank takes cores / ranks, the default), CPU
# only (a build without CUDA), against 1 rank, on a database of about 1.8 G residues (RESIDUES), packed
# (`duet makedb`) and FASTA. Every run's /results must equal the 1-rank run's
# (bench/compare_results.py). Pkinase (one model) and ten models of Pfam-like lengths.
# Each rank's phases, chunk requests and gather (DUET_TIMES) go to logs.tgz, for the
# model of cluster scaling in bench/RESULTS.md.
#   GPUS=2 (a machine of 2 GPUs, a build with CUDA): instead, --gpu-only with one process on
#   GPU 0, one process on both GPUs, and 2 ranks with one GPU each (the host's cores split
#   between them), Pkinase and the ten models.
#   Run from the source root on the GPU machine with .device carried (its debs hold
#   Debian's Open MPI: libopenmpi-dev, openmpi-bin and their libraries), or on any machine
#   where `mpirun` runs. OUT: where times.tsv and the logs go. ROUNDS (default 2). CASES
#   (default "one fasta ten"): Pkinase on the packed database, Pkinase on the FASTA (CPU
#   only), the ten models, and "long": LONG models of 1,000 nodes (GPUS=2 only).
set -uo pipefail
rounds=${ROUNDS:-2}; residues=${RESIDUES:-1.8e9}; gpus=${GPUS:-0}; cases=${CASES:-one fasta ten}
if [ -f .device/setup.sh ]; then
  source bench/device_env.sh
  # Open MPI unpacked under /opt/deps: its tools find their files from OPAL_PREFIX.
  export OPAL_PREFIX=/opt/deps/usr
  for tool in mpirun mpicc; do
    [ -x /opt/deps/usr/bin/$tool ] || ln -sf $tool.openmpi /opt/deps/usr/bin/$tool
  done
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # The host's own PMIx plugins (another version) are not ours to load.
  export PMIX_MCA_mca_base_component_path=/opt/deps/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
else
  out=${OUT:-mpi-out}; mkdir -p "$out"
fi
t0=$(date +%s)
cuda=OFF; [ "$gpus" -gt 0 ] && cuda=ON
cmake -S . -B build-mpi -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF \
  -DBUILD_TESTING=OFF -DDUET_ENABLE_CUDA=$cuda -DMPI_C_COMPILER="$(command -v mpicc)" > "$out/cmake.log" 2>&1 ||
  { tail -30 "$out/cmake.log"; exit 1; }
grep -q "duet: MPI ON" "$out/cmake.log" || { grep -i mpi "$out/cmake.log"; echo "no MPI found"; exit 1; }
cmake --build build-mpi -j"$(nproc)" --target duet > "$out/build.log" 2>&1 ||
  { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
duet=$PWD/build-mpi/duet
work=/tmp/mpi-ranks; mkdir -p $work
# One model (Pkinase, else a synthetic one of its length), and ten of Pfam-like lengths.
one=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
[ -f $one ] || { $duet synth-model -L 260 --seed 5 -o $work/one.hmm >/dev/null; one=$work/one.hmm; }
$duet synth-model -L 90 120 150 180 210 240 270 300 350 420 --seed 5 -o $work/ten.hmm >/dev/null
# GPUS=2 with "long" in CASES: LONG models of 1,000 nodes (default 80), a job whose GPU work
# (MSV and the Viterbi filter) outweighs the fixed costs of a run many times over.
if [[ $cases == *long* ]]; then
  $duet synth-model $(for _ in $(seq 1 "${LONG:-80}"); do echo -n "-L 1000 "; done) --seed 6 \
    -o $work/long.hmm >/dev/null
fi
# The database: duet synth-db's 200 M residues (at most), repeated up to RESIDUES (names
# repeat; the search does not mind), packed once.
if [ ! -f $work/db.packed ]; then
  part=$(python3 -c "print(min(2e8, $residues))")
  $duet synth-db --residues "$part" --seed 5 -o $work/part.fa > /dev/null
  copies=$(python3 -c "print(max(1, round($residues / $part)))")
  for _ in $(seq 1 "$copies"); do cat $work/part.fa; done > $work/db.fa
  rm $work/part.fa
  $duet makedb $work/db.fa $work/db.packed | tail -1
fi
echo "prepared: $(( $(date +%s) - t0 )) s"
printf "models\tdatabase\tranks\tround\tseconds\n" > "$out/times.tsv"
mkdir -p $work/logs
devices=--no-gpu; [ "$gpus" -gt 0 ] && devices=--gpu-only
run() {  # models database ranks
  local models=$1 db=$2 np=$3 s ms name
  name=$(basename "$models" .hmm)_${db##*.}_$np
  s=$(date +%s%N)
  DUET_TIMES=1 mpirun --oversubscribe --bind-to none -x DUET_TIMES -np "$np" $duet hmmsearch \
    $devices --h5 $work/r_$name.h5 "$models" "$db" > $work/log.txt 2> $work/logs/${name}_$round.txt ||
    { echo "failed: $(tail -3 $work/logs/${name}_$round.txt)"; }
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf "%s\t%s\t%d\t%d\t%d.%03d\n" "$(basename "$models" .hmm)" "${db##*.}" "$np" "$round" \
    $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
}
plain() {  # models database [label extra...]: one process, no mpirun
  local models=$1 db=$2 label=${3:-plain} s ms
  shift 3 2>/dev/null || shift 2
  s=$(date +%s%N)
  DUET_TIMES=1 $duet hmmsearch $devices "$@" --h5 $work/plain_${label}_$(basename "$models" .hmm).h5 "$models" "$db" \
    > $work/log.txt 2> $work/logs/${label}_$(basename "$models" .hmm)_$round.txt
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf "%s\t%s\t%s\t%d\t%d.%03d\n" "$(basename "$models" .hmm)" "${db##*.}" "$label" "$round" \
    $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
}
if [ "$gpus" -gt 0 ]; then
  sets=()
  [[ $cases == *one* ]] && sets+=("$one")
  [[ $cases == *ten* ]] && sets+=("$work/ten.hmm")
  [[ $cases == *long* ]] && sets+=("$work/long.hmm")
  for round in $(seq 1 "$rounds"); do
    for models in "${sets[@]}"; do
      plain $models $work/db.packed one_gpu --gpus 0
      plain $models $work/db.packed both_gpus
      run $models $work/db.packed 2
    done
  done
  for m in "${sets[@]}"; do
    m=$(basename "$m" .hmm)
    for f in $work/r_${m}_packed_2.h5 $work/plain_both_gpus_$m.h5; do
      printf "%s: " "$(basename "$f")"
      ${PYTHON:-python3} bench/compare_results.py $work/plain_one_gpu_$m.h5 "$f" | tail -1
    done
  done | tee "$out/compare.txt"
  tar -C $work -czf "$out/logs.tgz" logs
  exit 0
fi
for round in $(seq 1 "$rounds"); do
  if [[ $cases == *one* ]]; then
    plain $one $work/db.packed
    for np in 1 2 4 8; do run $one $work/db.packed $np; done
  fi
  if [[ $cases == *fasta* ]]; then for np in 1 8; do run $one $work/db.fa $np; done; fi
  if [[ $cases == *ten* ]]; then
    plain $work/ten.hmm $work/db.packed
    for np in 1 2 4 8; do run $work/ten.hmm $work/db.packed $np; done
  fi
done
for f in $work/r_*.h5; do
  base=$work/r_$(basename "$f" | cut -d_ -f2)_packed_1.h5
  printf "%s: " "$(basename "$f")"; ${PYTHON:-python3} bench/compare_results.py "$base" "$f" | tail -1
done | tee "$out/compare.txt"
grep -h "chunk requests" $work/logs/ten_packed_8_1.txt | tee "$out/messages.txt"
tar -C $work -czf "$out/logs.tgz" logs
