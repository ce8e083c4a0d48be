// TEST DOUBLE of a GPU, for any workload (debug setting DUET_DEBUG_TEST_GPU only): a
// feeder whose "device" is the workload's CPU code, run on the feeder's thread and the
// host loops it is lent. Tests and CPU-only builds use it to exercise the feeder path
// (batches, the post stage, fault requeue) without a GPU. The scheduler does not know it
// from a real device; the workload records that its GPUs were test doubles.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/scheduler.hpp"

namespace duet::app {

template <class BlockResult>
class TestDoubleGpu final : public scheduler::GpuBackend {
 public:
  // A block's results, computed on the feeder's thread (host loops through the runner).
  using Compute =
      std::function<BlockResult(const Block&, const scheduler::HostLoopRunner& run_host_loop)>;
  // Hands a block's results to the workload and says what remains of it.
  using Deliver = std::function<scheduler::GpuBlockOutcome(const Block&, BlockResult&&)>;

  TestDoubleGpu(int number, std::string stages, Compute compute, Deliver deliver)
      : number_(number),
        stages_(std::move(stages)),
        compute_(std::move(compute)),
        deliver_(std::move(deliver)) {}

  std::string name() const override { return "test-double GPU " + std::to_string(number_); }
  std::string stages() const override { return stages_; }
  void start(const scheduler::HostLoopRunner& run_host_loop) override {
    run_host_loop_ = run_host_loop;
  }
  // Every block of the batch is computed before any is delivered, as a device must: a
  // batch that fails delivers nothing.
  std::vector<scheduler::GpuBlockOutcome> run(std::span<const BlockPtr> blocks, int) override {
    std::vector<BlockResult> results;
    results.reserve(blocks.size());
    for (const BlockPtr& b : blocks) results.push_back(compute_(*b, run_host_loop_));
    std::vector<scheduler::GpuBlockOutcome> outcomes;
    outcomes.reserve(blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i)
      outcomes.push_back(deliver_(*blocks[i], std::move(results[i])));
    return outcomes;
  }

 private:
  int number_;
  std::string stages_;
  Compute compute_;
  Deliver deliver_;
  scheduler::HostLoopRunner run_host_loop_ = scheduler::run_host_loop_serially;
};

}  // namespace duet::app
