// The GPUs this build can use, seen through a plain C++ header (no CUDA types).
// In a build without CUDA, list_gpus() reports that no GPU support is compiled in.
#pragma once

#include <string>
#include <vector>

namespace duet::device {

struct GpuInfo {
  int index = 0;
  std::string name;
  int multiprocessors = 0;
  double memory_gib = 0;
  int compute_major = 0, compute_minor = 0;
};

struct GpuInventory {
  bool cuda_compiled = false;
  std::string driver;   // "13.0" etc.; empty when no driver answers
  std::string problem;  // why no GPU is usable, empty when some are
  std::vector<GpuInfo> gpus;
};

GpuInventory list_gpus();

}  // namespace duet::device
