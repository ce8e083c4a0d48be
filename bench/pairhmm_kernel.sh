#!/usr/bin/env bash
# Issue 21's pair-HMM kernel, alone, in one device call: builds pairhmm_gpu_tests of this
# tree (and, with BASE=a tar of another tree, of that one beside it), runs this tree's
# bit-for-bit GPU tests, then per round the kernel-only throughput of every flush-to-zero
# shape and of `auto` on 10s.in x1 and x64 (the builds alternated), then `ncu` on one x64
# launch of SHAPE (instructions, issue rate, occupancy) and the SASS of SHAPE's kernel
# (instruction counts by opcode), for each build. VARIANTS adds builds of this tree with
# other CUDA flags ("name|flags;name|flags"), for experiments behind macros.
#   OUT=$OUT [ROUNDS=2] [SHAPE=8x8] [BASE=.device/base.tar] [VARIANTS=...] \
#     bash bench/pairhmm_kernel.sh
set -uo pipefail
source bench/device_env.sh
rounds=${ROUNDS:-2} shape=${SHAPE:-8x8}
data=${DUET_SHARED_DATA:-$PWD/.device/data}
log=$out/log.txt
build() {  # build SOURCE DIR [CUDA_FLAGS]
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_SHARED_DATA="$data" \
    -DCMAKE_CUDA_FLAGS="${3:-}" > "$2.log" 2>&1 &&
    cmake --build "$2" -j16 --target pairhmm_gpu_tests >> "$2.log" 2>&1
}
builds=(new)
declare -A pids
if [ -n "${BASE:-}" ]; then
  mkdir -p /tmp/base-src && tar -xf "$BASE" -C /tmp/base-src
  build /tmp/base-src /tmp/k-base & pids[base]=$!
fi
IFS=';' read -ra variants <<< "${VARIANTS:-}"
for v in "${variants[@]}"; do
  build . "/tmp/k-${v%%|*}" "${v#*|}" & pids[${v%%|*}]=$!
done
build . /tmp/k-new || { grep -B2 -A8 error /tmp/k-new.log | head -60 | tee -a "$log"; exit 1; }
for b in "${!pids[@]}"; do
  if wait "${pids[$b]}"; then builds+=("$b"); else tail -20 "/tmp/k-$b.log" | tee -a "$log"; fi
done
date -u | tee -a "$log"
for b in "${builds[@]}"; do  # this tree's builds: every GPU test; a variant: the ftz kernels'
  [ "$b" = base ] && continue
  filter='-*Throughput*'; [ "$b" != new ] && filter='*ftz*-*Throughput*'
  timeout 300 /tmp/k-$b/tests/pairhmm_gpu_tests --gtest_filter="$filter" > "$out/tests_$b.txt" 2>&1
  echo "GPU tests, $b: rc $?, $(grep -c 'DUET_TEST_SEED' "$out/tests_$b.txt") seeds printed" | tee -a "$log"
  grep -E "FAILED|PASSED|Failure|mismatch" "$out/tests_$b.txt" | head -20 | tee -a "$log"
done
for round in $(seq 1 "$rounds"); do
  for b in "${builds[@]}"; do
    timeout 200 /tmp/k-$b/tests/pairhmm_gpu_tests --gtest_filter='*Throughput/intra_ftz_*:*Throughput/intra_auto' 2>&1 |
      grep gcups | sed "s/^/round $round $b /" | tee -a "$log"
  done
done
for b in "${builds[@]}"; do
  ncu --kernel-name regex:intra_ftz --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats \
    --section LaunchStats /tmp/k-$b/tests/pairhmm_gpu_tests \
    --gtest_filter="*Throughput/intra_ftz_$shape" > "$out/ncu_$b.txt" 2>&1
  echo "ncu $b $shape:" | tee -a "$log"
  grep -E "Executed Instructions  |Issued Warp|Registers Per|Achieved Occupancy|Duration|Eligible Warps|Active Warps Per|No Eligible|SM Frequency|Theoretical Occ" \
    "$out/ncu_$b.txt" | head -14 | tee -a "$log"
  obj=$(find /tmp/k-$b -name 'pairhmm_gpu.cu.o' | head -1)
  /usr/local/cuda/bin/cuobjdump --dump-sass "$obj" > /tmp/sass_$b.txt 2>&1
  python3 - /tmp/sass_$b.txt "$shape" "$out/sass_$b.txt" <<'PY' | tee -a "$log"
import re, sys, collections
text = open(sys.argv[1]).read()
g, k = sys.argv[2].split("x")
funcs = re.split(r"\n\s*Function : ", text)
name = f"intra_ftz_kernelILi{g}ELi{k}E"
body = next((f for f in funcs if name in f.split("\n")[0]), None)
if body is None:
    sys.exit(f"no SASS for {name}")
open(sys.argv[3], "w").write(body)
ops = collections.Counter()
for line in body.split("\n"):
    m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if m:
        ops[m.group(2).split(".")[0]] += 1
print(f"SASS {name}: {sum(ops.values())} instructions;",
      ", ".join(f"{o} {n}" for o, n in ops.most_common(18)))
PY
done
