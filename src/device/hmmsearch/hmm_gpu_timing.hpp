// Kernel-only timing of the hmmsearch GPU kernels (one place for `duet tune` and
// bench/hmm_gpu_bench): an engine with a given kernel choice runs MSV and the Viterbi
// filter on given targets; the times are the kernels' own (CUDA events, uploads
// excluded), after a warm-up batch. A sample of the scores is checked against the scalar
// references (a timing whose answers are wrong proves nothing).
#pragma once

#include <vector>

#include "device/hmmsearch/hmm_gpu.hpp"

namespace duet::device {

struct HmmKernelTiming {
  double msv_ms = 0;        // fast MSV kernel plus the exact re-run of its J-state targets
  double msv_exact_ms = 0;  // the exact re-run alone
  long long msv_exact_targets = 0;
  double viterbi_ms = 0;
  int checked = 0, wrong = 0;  // sampled scores compared with the references
  bool jit_used = false;       // the engine ran a run-time specialised kernel
};

// Times MSV on `msv_targets` (skipped when empty) and Viterbi on `viterbi_targets`
// (skipped when empty), checking about `samples` scores of each.
HmmKernelTiming time_hmm_kernels(int device, const SearchProfile& profile, GpuKernelChoice choice,
                                 const std::vector<GpuTarget>& msv_targets,
                                 const std::vector<GpuTarget>& viterbi_targets, int samples = 50);

}  // namespace duet::device
