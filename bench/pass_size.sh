#!/bin/bash
# Models per pass on the GPU machine, after bench/compare_builds.sh has run in the same call
# (it leaves both builds and the `many` inputs under /tmp/compare): the `many` case with
# --gpu-only and --no-gpu at 64, 128 and 256 models per pass (DUET_DEBUG_MODELS_PER_PASS,
# with DUET_DEBUG_NODES_PER_PASS raised in proportion), ROUNDS rounds, each variant's
# /results compared with the default's, and one DUET_TIMES run of --gpu-only per build.
# Usage: OUT=$OUT bash bench/pass_size.sh (from the source root).
set -uo pipefail
rounds=${ROUNDS:-2}; out=${OUT:-device-out}; mkdir -p "$out"
work=/tmp/compare; new=./build-dev/duet; old=./build-base/duet
for which in old new; do
  DUET_TIMES=1 ${!which} hmmsearch --quiet --gpu-only --h5 $work/times-$which.h5 \
    $work/models.hmm $work/proteome.fa > "$out/times-gpu-only-$which.txt" 2>&1
done
printf "mode\tmodels_per_pass\tround\tseconds\n" > "$out/pass_size.tsv"
for round in $(seq $rounds); do
  for mode in gpu-only no-gpu; do
    for per in 64 128 256; do
      s=$(date +%s%N)
      DUET_DEBUG_MODELS_PER_PASS=$per DUET_DEBUG_NODES_PER_PASS=$((per * 512)) \
        $new hmmsearch --quiet --$mode --h5 $work/pass-$mode-$per.h5 $work/models.hmm \
        $work/proteome.fa > $work/pass-$mode-$per.log 2>&1 || echo "$mode $per failed: $(tail -2 $work/pass-$mode-$per.log)"
      ms=$(( ($(date +%s%N) - s) / 1000000 ))
      printf "%s\t%s\t%s\t%d.%03d\n" $mode $per $round $((ms / 1000)) $((ms % 1000)) | tee -a "$out/pass_size.tsv"
    done
  done
done
for mode in gpu-only no-gpu; do for per in 128 256; do
  echo "$mode $per: $(python3 bench/compare_results.py $work/pass-$mode-64.h5 $work/pass-$mode-$per.h5 | tail -1)"
done; done
