#!/bin/bash
# Where a `duet papara` run's wall time goes, on the GPU machine (.device carried): builds
# duet and the papara tests, runs `ctest -R Papara`, then each mode (--gpu-only, default,
# --no-gpu) once on the 500-taxon reference with 10,000 reads and the 5,000-taxon one with
# 2,000 (bench/papara_data.sh, carried gzipped in .device/papara_bench) under DUET_TIMES=1:
# seconds from the start to each phase, CPU seconds by kind of thread, scheduler GCUPS.
source bench/device_env.sh > /dev/null
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_BUILD_BENCH=ON > /dev/null 2>&1
cmake --build build-dev -j16 --target duet papara_tests papara_gpu_tests > $out/build.log 2>&1 || { tail -30 $out/build.log; exit 1; }
ctest --test-dir build-dev -R Papara -j8 2>&1 | grep -E "tests passed|Failed|\*\*\*|Not Run" | head
w=/tmp/pp; mkdir -p $w
for t in 500 5000; do
  d=$w/T$t; mkdir -p $d; for f in ref.tre ref.phy queries.fa; do zcat .device/papara_bench/papara_$t/$f.gz > $d/$f; done
  n=$([ $t = 500 ] && echo 10000 || echo 2000); awk -v n=$n '/^>/{k++} k<=n' $d/queries.fa > $d/q.fa
  for mode in --gpu-only "" --no-gpu; do
    echo "== T$t $mode"
    s=$(date +%s.%N)
    DUET_TIMES=1 ./build-dev/duet papara -t $d/ref.tre -s $d/ref.phy -q $d/q.fa $mode --alignment $d/a.phy --h5 $d/o.h5 2>&1 | grep -E "time|GCUPS|cpu seconds" | awk -v s=$s '/duet: time/{printf "%.3f %s %s\n", $3-s, $4, $5; next} {print}'
  done
done
