#!/usr/bin/env bash
# Benchmark inputs for `duet papara` (and PaPaRa 2.5 for comparison).
#
#   DATA=/path/to/dir [SIZES="500 5000"] [READS=10000] [COLS=1500] [SEED=7] bench/papara_data.sh
#
# For each size T writes $DATA/papara_T/{ref.tre,ref.phy,queries.fa}:
#   ref.tre     random tree over T reference taxa (trifurcating root, branches 0.005-0.08)
#   ref.phy     INDELible true alignment of the references, about COLS columns
#               (columns that are gaps in every reference are dropped)
#   queries.fa  READS reads of 100-150 bases cut from T/3 other simulated taxa that
#               are not in the reference, with ~3% substitutions and a few small indels
# Needs python3 and INDELible (Debian package `indelible`). Deterministic for a given SEED.
# The indel rate is scaled by the tree length so that the alignment stays about
# COLS wide with moderate gappiness at every size.
#
# Example run:  papara -t ref.tre -s ref.phy -q queries.fa -j N -n bench
set -euo pipefail

: "${DATA:?set DATA to the output directory}"
SIZES=${SIZES:-"500 5000"}
READS=${READS:-10000}
COLS=${COLS:-1500}
SEED=${SEED:-7}
here=$(cd "$(dirname "$0")" && pwd)
sim=$here/../tests/data/papara/papara_sim.py
command -v indelible >/dev/null || { echo "indelible not found (apt-get install indelible)" >&2; exit 1; }

for t in $SIZES; do
  dir=$DATA/papara_$t
  mkdir -p "$dir"
  src=$((t / 3))
  # expected total tree length = branches * mean branch length
  rate=$(awk -v n=$((t + src)) 'BEGIN { printf "%.6f", 0.1 / ((2 * n - 3) * 0.0425) }')
  start=$(date +%s)
  python3 "$sim" --outdir "$dir" --seed $((SEED + t)) --taxa "$t" --sources "$src" \
    --cols "$COLS" --reads "$READS" --read-min 100 --read-max 150 \
    --bl-min 0.005 --bl-max 0.08 --indel-rate "$rate"
  echo "papara_$t: $(head -1 "$dir/ref.phy") (taxa cols), $(grep -c '>' "$dir/queries.fa") reads," \
       "indel rate $rate, $(($(date +%s) - start)) s"
done
