// Kernel sources embedded into the binary for run-time specialisation with NVRTC
// (nvrtc_jit.hpp). Each is the text of a self-contained header of src/device, copied at
// build time (cmake/embed_text.cmake), so the text NVRTC compiles is the text nvcc
// compiled into the static kernels.
#pragma once

#include <string_view>

namespace duet::device {

// src/device/hmmsearch/msv_exact_kernel.cuh
std::string_view msv_exact_kernel_source();

}  // namespace duet::device
