// Shared by the hmmsearch GPU tests: skipping where no GPU is usable, and the search
// profile of a model with its alphabet's background.
#pragma once

#include <gtest/gtest.h>

#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/profile.hpp"
#include "device/gpu_info.hpp"

namespace duet::gpu_test {

inline bool have_gpu() {
  return !device::list_gpus().gpus.empty();
}

inline SearchProfile profile_of(const HmmModel& hmm) {
  return build_search_profile(hmm, Background::for_alphabet(*hmm.alphabet));
}

}  // namespace duet::gpu_test

// Skips the test, with the reason, where no GPU is usable.
#define REQUIRE_GPU()                \
  if (!::duet::gpu_test::have_gpu()) \
  GTEST_SKIP() << "no usable GPU (" << ::duet::device::list_gpus().problem << ")"
