// Kernel-only timing of the hmmsearch GPU kernels: see hmm_gpu_timing.hpp.
#include "device/hmmsearch/hmm_gpu_timing.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/hmmsearch/reference_kernels.hpp"

namespace duet::device {

namespace {
bool same(const FilterScore& a, const FilterScore& b) {
  return a.overflow == b.overflow && std::memcmp(&a.nats, &b.nats, sizeof(float)) == 0;
}
}  // namespace

HmmKernelTiming time_hmm_kernels(int device, const SearchProfile& profile, GpuKernelChoice choice,
                                 const std::vector<GpuTarget>& msv_targets,
                                 const std::vector<GpuTarget>& viterbi_targets, int samples) {
  HmmGpuEngine engine(device, profile, choice);
  HmmKernelTiming t;
  t.jit_used = engine.kernel_choice().jit;
  const std::size_t every_msv = msv_targets.size() / std::max(1, samples) + 1;
  const std::size_t every_vit = viterbi_targets.size() / std::max(1, samples) + 1;
  if (!msv_targets.empty()) {
    // Warm-up on a small batch, then the timed run.
    engine.submit_msv(0, msv_targets.data(), std::min<std::size_t>(msv_targets.size(), 2000));
    engine.wait_msv(0);
    engine.submit_msv(0, msv_targets.data(), msv_targets.size());
    const auto& scores = engine.wait_msv(0);
    const GpuKernelTimes times = engine.kernel_times(0);
    t.msv_ms = times.msv_ms + times.msv_exact_ms;
    t.msv_exact_ms = times.msv_exact_ms;
    t.msv_exact_targets = times.msv_exact_targets;
    for (std::size_t i = 0; i < scores.size(); i += every_msv) {
      ++t.checked;
      if (!same(msv_filter_reference(profile.msv, msv_targets[i].residues, msv_targets[i].length),
                scores[i]))
        ++t.wrong;
    }
  }
  if (!viterbi_targets.empty()) {
    std::vector<int> all(viterbi_targets.size());
    std::iota(all.begin(), all.end(), 0);
    const std::size_t warm = std::min<std::size_t>(all.size(), 500);
    engine.submit_msv(1, viterbi_targets.data(), viterbi_targets.size());
    engine.wait_msv(1);
    engine.submit_viterbi(1, all.data(), warm);
    engine.wait_viterbi(1);
    engine.submit_viterbi(1, all.data(), all.size());
    const auto& scores = engine.wait_viterbi(1);
    t.viterbi_ms = engine.kernel_times(1).viterbi_ms;
    for (std::size_t i = 0; i < scores.size(); i += every_vit) {
      ++t.checked;
      const auto r = viterbi_filter_reference(profile.viterbi, viterbi_targets[i].residues,
                                              viterbi_targets[i].length);
      if (!same(r, scores[i])) ++t.wrong;
    }
  }
  return t;
}

}  // namespace duet::device
