#!/bin/bash
# The CPU/GPU split policy of the default (hybrid) mode, dynamic against adaptive, for every
# workload, in one call on the GPU machine: whole processes in alternating rounds, beside
# --no-gpu and --gpu-only, with every output compared with --no-gpu's.
#   hmmsearch: Pkinase and ten duet synth-model models (90 to 420 nodes) against RESIDUES
#     (default 5e8) of duet synth-db, packed; the hybrid forced (--gpu-min-database 0);
#   pairhmm: 10s.in 1,024 times (bench/pairhmm_inputs.py; 64 G cells);
#   papara: the 500-taxon INDELible reference of bench/papara_data.sh with 10,000 reads
#     (.device/papara_bench), DNA.
# Run from the source root with .device carried (see bench/many_models.sh). Writes
# times.tsv and compare.txt under $OUT. ROUNDS (default 2).
set -uo pipefail
rounds=${ROUNDS:-2}; residues=${RESIDUES:-5e8}
source bench/device_env.sh
data=${DUET_SHARED_DATA:-$PWD/.device/data}
t0=$(date +%s)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=OFF \
  -DDUET_SHARED_DATA="$data" > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-dev -j16 --target duet > "$out/build.log" 2>&1 ||
  { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
duet=$PWD/build-dev/duet
work=/tmp/policy; mkdir -p $work
$duet synth-model -L 90 120 150 180 210 240 270 300 350 420 --seed 5 -o $work/ten.hmm >/dev/null
rm -f $work/db.packed
packed_synth_db $duet $work/db.packed "$residues"
python3 bench/pairhmm_inputs.py copies "$data/pairhmm/10s.in" 1024 $work/x1024.in
p=$work/papara; mkdir -p $p
for f in ref.tre ref.phy queries.fa; do zcat .device/papara_bench/papara_500/$f.gz > $p/$f; done
awk '/^>/{k++} k<=10000' $p/queries.fa > $p/q.fa
echo "prepared: $(( $(date +%s) - t0 )) s"
printf "workload\tcase\tmode\tround\tseconds\n" > "$out/times.tsv"
time_it() {  # workload case mode command...
  local w=$1 c=$2 m=$3 s ms; shift 3
  s=$(date +%s%N)
  "$@" > $work/$w-$c-$m.log 2>&1 || echo "$w $c $m failed: $(tail -2 $work/$w-$c-$m.log)"
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf "%s\t%s\t%s\t%s\t%d.%03d\n" "$w" "$c" "$m" "$round" $((ms / 1000)) $((ms % 1000)) | tee -a "$out/times.tsv"
}
modes=("cpu|--no-gpu" "gpu|--gpu-only" "dynamic|--policy dynamic" "adaptive|--policy adaptive")
for round in $(seq $rounds); do
  for m in "${modes[@]}"; do
    name=${m%%|*}; opts=${m#*|}
    for c in Pkinase ten; do
      hmm=$work/ten.hmm; [ $c = Pkinase ] && hmm=/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm
      time_it hmmsearch $c $name $duet hmmsearch --quiet $opts --gpu-min-database 0 \
        --h5 $work/h-$c-$name.h5 $hmm $work/db.packed
    done
    time_it pairhmm x1024 $name $duet pairhmm --quiet $opts --h5 $work/p-$name.h5 $work/x1024.in
    time_it papara T500 $name $duet papara --quiet -t $p/ref.tre -s $p/ref.phy -q $p/q.fa $opts \
      --alignment $work/a-$name.phy --h5 $work/a-$name.h5
  done
done
{
  for name in gpu dynamic adaptive; do
    for c in Pkinase ten; do
      echo "hmmsearch $c $name: $(python3 bench/compare_results.py $work/h-$c-cpu.h5 $work/h-$c-$name.h5 | tail -1)"
    done
    echo "pairhmm $name: $(python3 bench/compare_results.py $work/p-cpu.h5 $work/p-$name.h5 | tail -1)"
    cmp -s $work/a-cpu.phy $work/a-$name.phy && echo "papara $name: identical" || echo "papara $name: DIFFERENT"
  done
} | tee "$out/compare.txt"
