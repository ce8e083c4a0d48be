// Which pair-HMM kernels the app runs: the CPU kernel (scalar or a SIMD variant chosen at
// run time, or forced by --isa) and the GPU backends (inter-task or intra-task kernel).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/pairhmm/pairhmm_model.hpp"
#include "io/kernel_table.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

struct CpuKernel {
  std::string name;  // e.g. "avx512 inter-pair x16 float"
  std::string isa;   // scalar, avx2, avx512
  int lanes = 1;     // pairs per group of the kernel
  pairhmm::ForwardSumsFunction function = nullptr;
  pairhmm::ForwardSumsFunction grouped = nullptr;  // on pairs grouped by group_pairs(lanes)
};

// "auto": the fastest the CPU has; otherwise the named ISA, a UsageError when the CPU or
// the build lacks it.
const CpuKernel& select_cpu_kernel(const std::string& isa);

// Delivers the float sums of pairs first, first + 1, ... once a device batch succeeded.
using SumsConsumer = std::function<void(std::int64_t first, std::span<const float> sums)>;

struct GpuBackends {
  std::vector<std::unique_ptr<scheduler::GpuBackend>> backends;  // one per GPU
  // The GPU kernel's name, asked after the run (its arithmetic is known once a device
  // started); empty without backends.
  std::function<std::string()> kernel;
};

// `feeders` backends per GPU the driver shows (device::gpus_shown_by_driver; each its own
// feeder thread, batches and streams) with the kernel named by `kernel` ("auto", "inter",
// "intra"), each batch cut into `parts` parts overlapped on the GPU's two streams (1:
// none), packed by the feeder and `helpers` threads of its own (0: by the CPU workers that
// are free). The devices start on the warm-up thread
// (device::start_gpu_warmup), started here: no CUDA call on this thread.
// No GPU (or a build without CUDA): no backend, or a UsageError when `required`.
// `shapes`: the intra-task kernel's shape costs (checked by check_pairhmm_shapes); empty:
// the built-in ones.
GpuBackends make_gpu_backends(const pairhmm::Model& model, const std::string& kernel, int parts,
                              int feeders, int helpers, bool required, SumsConsumer consumer,
                              std::span<const pairhmm::Pair> pairs,
                              const io::PairhmmShapeTable& shapes = {});

// Checks a kernel table's [pairhmm_shapes] (read from `file`) against the shapes this build
// compiles (every build knows them): duet::InputError naming the file and the line of the
// first shape that is not compiled for its arithmetic.
void check_pairhmm_shapes(const io::PairhmmShapeTable& shapes, const std::string& file);

// The built-in shape costs (device::pairhmm::measured_shape_costs, measured on the H100) as
// a kernel table's [pairhmm_shapes]: what `duet tune` writes (it does not measure them).
io::PairhmmShapeTable measured_pairhmm_shapes();

}  // namespace duet::app
