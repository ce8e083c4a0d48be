// gpus_shown_by_driver and the device warm-up (see gpu_info.hpp).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "device/gpu_info.hpp"

namespace duet::device {

int gpus_shown_by_driver() {
  std::error_code error;
  const std::filesystem::path folder = "/proc/driver/nvidia/gpus";
  if (!std::filesystem::is_directory(folder, error)) return -1;
  int shown = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    (void)entry;
    ++shown;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return shown;
  // CUDA takes the names up to the first it cannot use; an empty list or "-1" hides all.
  int named = 0;
  std::string list = visible;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    if (name.empty() || name[0] == '-') break;
    ++named;
    start = end + 1;
  }
  return std::min(shown, named);
}

namespace {

struct Warmup {
  std::mutex mutex;
  bool started = false, listed = false, running = false;
  GpuInventory inventory;
  std::vector<WarmupState> states;  // by device index
  std::vector<std::string> problems;
};

// Never destroyed: the warm-up thread may still use it while the process ends.
Warmup& warmup() {
  static Warmup* w = new Warmup;
  return *w;
}

void warm_up(Warmup& w) {
  GpuInventory inventory = list_gpus();
  int devices = 0;
  for (const GpuInfo& g : inventory.gpus) devices = std::max(devices, g.index + 1);
  {
    std::lock_guard lock(w.mutex);
    w.states.assign(static_cast<std::size_t>(devices), WarmupState::unavailable);
    w.problems.assign(static_cast<std::size_t>(devices), "not listed by CUDA");
    for (const GpuInfo& g : inventory.gpus)
      w.states[static_cast<std::size_t>(g.index)] = WarmupState::pending;
    w.inventory = std::move(inventory);
    w.listed = true;
  }
  for (int d = 0; d < devices; ++d) {
    if (w.states[static_cast<std::size_t>(d)] != WarmupState::pending) continue;
    const std::string problem = make_device_context(d);
    std::lock_guard lock(w.mutex);
    w.states[static_cast<std::size_t>(d)] =
        problem.empty() ? WarmupState::ready : WarmupState::unavailable;
    w.problems[static_cast<std::size_t>(d)] = problem;
  }
  std::lock_guard lock(w.mutex);
  w.running = false;
}

}  // namespace

void start_gpu_warmup() {
  Warmup& w = warmup();
  std::lock_guard lock(w.mutex);
  if (w.started) return;
  w.started = true;
  w.running = true;
  try {
    std::thread([&w] { warm_up(w); }).detach();
  } catch (const std::system_error& e) {
    w.running = false;
    w.listed = true;
    w.inventory.problem = std::string("cannot start the GPU warm-up thread: ") + e.what();
  }
}

WarmupState gpu_warmup_state(int device, std::string* problem) {
  start_gpu_warmup();
  Warmup& w = warmup();
  std::lock_guard lock(w.mutex);
  if (!w.listed) return WarmupState::pending;
  if (device < 0 || device >= static_cast<int>(w.states.size())) {
    if (problem != nullptr) {
      *problem = !w.inventory.problem.empty()
                     ? w.inventory.problem
                     : "CUDA lists " + std::to_string(w.inventory.gpus.size()) + " GPUs";
    }
    return WarmupState::unavailable;
  }
  const auto d = static_cast<std::size_t>(device);
  if (problem != nullptr && w.states[d] == WarmupState::unavailable) *problem = w.problems[d];
  return w.states[d];
}

bool gpu_warmup_running() {
  Warmup& w = warmup();
  std::lock_guard lock(w.mutex);
  return w.running;
}

}  // namespace duet::device
