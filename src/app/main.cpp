// The `duet` command: subcommands `hmmsearch`, `makedb`, `info` and the others registered
// below. Every user-facing error ends here as one line on stderr and a non-zero exit
// status.
#include <H5public.h>
#include <oneapi/tbb/version.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>

#include "app/bench_command.hpp"
#include "app/hmmsearch/hmmsearch_command.hpp"
#include "app/kit/cluster.hpp"
#include "app/kit/run_context.hpp"
#include "app/makedb_command.hpp"
#include "app/pairhmm/pairhmm_command.hpp"
#include "app/papara/papara_command.hpp"
#include "app/synth_command.hpp"
#include "app/tune_command.hpp"
#include "core/error.hpp"
#include "core/thread_cpu.hpp"
#include "device/gpu_info.hpp"
#include "host_simd/hmmsearch/simd_kernels.hpp"

namespace {

using namespace duet;

int run_info() {
  const std::string model = app::cpu_model();
  std::cout << "duet " << DUET_VERSION << "\n";
  std::cout << "CPU:        " << model << "\n";
  std::cout << "cores:      " << std::thread::hardware_concurrency() << "\n";
  const auto has = [](simd::Isa isa) { return simd::cpu_supports(isa) ? "yes" : "no"; };
  std::cout << "ISAs:       sse4.1 " << has(simd::Isa::sse41) << ", avx2 " << has(simd::Isa::avx2)
            << ", avx512bw " << has(simd::Isa::avx512) << "\n";
  std::cout << "kernels:    scalar references";
  for (const simd::Isa isa : simd::kIsaPreference) {
    if (isa != simd::Isa::scalar && simd::cpu_supports(isa))
      std::cout << ", " << simd::isa_name(isa);
  }
  std::cout << "; chosen: " << simd::isa_name(simd::best_isa()) << " (--isa to force one)\n";
  const device::GpuInventory inv = device::list_gpus();
  std::cout << "CUDA:       "
            << (inv.cuda_compiled ? "compiled in" : "not compiled in (CPU-only build)");
  if (!inv.driver.empty()) std::cout << ", driver " << inv.driver;
  std::cout << "\n";
  for (const auto& g : inv.gpus) {
    std::printf("GPU %d:      %s, %d SMs, %.1f GiB, compute capability %d.%d\n", g.index,
                g.name.c_str(), g.multiprocessors, g.memory_gib, g.compute_major, g.compute_minor);
  }
  if (inv.gpus.empty()) std::cout << "GPUs:       none usable (" << inv.problem << ")\n";
  std::cout << "MPI:        "
            << (app::cluster_support() ? "compiled in (mpirun duet hmmsearch|hmmscan|pairhmm ...)"
                                       : "not compiled in (one process)");
  if (const app::Cluster* job = app::cluster())
    std::cout << ", rank " << job->rank() << " of " << job->size();
  std::cout << "\n";
  std::cout << "libraries:  oneTBB " << TBB_VERSION_MAJOR << "." << TBB_VERSION_MINOR << ", HDF5 "
            << H5_VERS_MAJOR << "." << H5_VERS_MINOR << "." << H5_VERS_RELEASE << ", toml++ "
            << TOML_LIB_MAJOR << "." << TOML_LIB_MINOR << "." << TOML_LIB_PATCH << ", CLI11 "
            << CLI11_VERSION << "\n";
  return 0;
}

// The message and exit status of a run stopped by a signal (app::stop_exit_status).
int report_stop() {
  if (app::says_errors())
    std::cerr << app::message_prefix() << app::stop_reason() << "; no output written\n";
  return app::stop_exit_status();
}

// Says an error (on the ranks that say it: app::says_errors) and returns `status`.
int report_error(const char* what, int status) {
  if (app::says_errors()) std::cerr << app::message_prefix() << "error: " << what << "\n";
  return status;
}

// DUET_TIMES=1: the exit time and the CPU seconds by kind of thread
// (scheduler/thread_cpu.hpp), for throughput studies.
void at_exit() {
  app::phase_time("exit");
  if (app::timings_wanted()) {
    std::string line = "duet: cpu seconds:";
    for (const auto& [kind, seconds] : thread_cpu_seconds()) {
      char figure[32];
      std::snprintf(figure, sizeof figure, " %.3f", seconds);
      line += " " + kind + figure + ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

// Says what ended a command early (a signal, or an error: one line) and returns the
// exit status.
int report(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const app::PeerFailed& p) {
    return p.status;  // another rank said why
  } catch (const app::Interrupted&) {
    return report_stop();
  } catch (const InputError& e) {
    // A signal makes blocked reads and opens fail; the signal is the reason, not them.
    if (app::g_interrupted.load()) return report_stop();
    return report_error(e.what(), 1);
  } catch (const UsageError& e) {
    if (app::g_interrupted.load()) return report_stop();
    return report_error(e.what(), 2);
  } catch (const std::exception& e) {
    if (app::g_interrupted.load()) return report_stop();
    return report_error(e.what(), 1);
  }
}

int run_main(int argc, char** argv) {
  // HDF5 must not register its exit handler: after a write fails (a full disk) it would
  // close the failed file again at exit and crash. duet closes or discards every file it
  // opens itself.
  H5dont_atexit();
  app::phase_time("main");
  std::atexit(at_exit);
  CLI::App app{"duet: profile HMM search and other sequence DP on every CPU core and GPU at once"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("duet ") + DUET_VERSION);
  // Each subcommand registers here, and is run when it is the one parsed.
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  app::add_hmmsearch_command(app, commands, argc, argv);
  app::add_hmmscan_command(app, commands, argc, argv);
  auto* info = app.add_subcommand("info", "Show the CPU, GPUs, instruction sets and build options");
  commands.emplace_back(info, run_info);
  app::add_makedb_command(app, commands);
  app::add_synth_commands(app, commands);
  app::add_pairhmm_command(app, commands, argc, argv);
  app::add_papara_command(app, commands, argc, argv);
  app::add_bench_command(app, commands);
  app::add_tune_command(app, commands, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank of a job parsed the same command line: rank 0 answers.
    if (!app::says_errors()) return e.get_exit_code() == 0 ? 0 : 2;
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [command, action] : commands) {
      if (!command->parsed()) continue;
      // The commands that share their work among the ranks of an MPI job; the others
      // refuse a job of several ranks.
      const std::string name = command->get_name();
      if (name != "hmmsearch" && name != "hmmscan" && name != "pairhmm" && name != "info")
        app::refuse_several_ranks("duet " + name);
      return action();
    }
    return 2;  // require_subcommand(1): not reached
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    // A rank that fails before its command's checkpoint still tells the others, which
    // wait there (app::agree_on_checks); the rank that says the error is decided there.
    if (app::cluster() != nullptr && !app::checks_agreed()) {
      try {
        app::agree_on_checks(error);
      } catch (...) {
        error = std::current_exception();
      }
    }
    return report(error);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun or srun, this process is a rank of a job (app/kit/cluster.hpp).
  app::ClusterSession session(&argc, &argv);
  const int status = run_main(argc, argv);
  // A rank that failed once the job ran ends every rank (the others may wait for it).
  if (status != 0 && app::cluster_running()) app::cluster()->abort(status);
  // A device still starting (the run ended first): the CUDA runtime's exit handlers must not
  // run beside the warm-up thread. Every output is committed and closed by now.
  if (device::gpu_warmup_running()) {
    std::cout.flush();
    at_exit();
    std::fflush(nullptr);
    session.end();
    ::_exit(status);
  }
  return status;
}
