// The command-line flags every workload's command shares: the configuration file, the
// result file (--h5) and the text output (-o, as in HMMER), the CPU workers, the devices and the
// scheduler's settings. Each flag only overrides io::Config (the file of --config, else the
// defaults) when it is given, and its help text shows io::Config's default, so that the command
// line and the TOML file have one set of defaults. A workload's command adds its own flags beside
// these.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/config.hpp"

namespace duet::app {

// A default as the help text shows it (as the configuration file would write it).
std::string help_number(double value);
// A number given on the command line (`option` counted), checked with the rule of its TOML
// key (check_option_number); nothing when the option was not given.
void check_number(const CLI::Option* option, std::string_view key, double value);

class RunFlags {
 public:
  // Registers the flags on `command`. `work` names what a block holds ("residues",
  // "cells"), for the help text; `default_batch_blocks` is the workload's GPU batch size.
  RunFlags(CLI::App& command, const std::string& work, std::size_t default_batch_blocks);
  RunFlags(const RunFlags&) = delete;
  RunFlags& operator=(const RunFlags&) = delete;

  // The configuration of the run: --config's file (or the defaults), then every flag
  // given, each number checked with the rule of its TOML key (io::number_problem).
  io::Config config() const;
  const std::string& config_path() const { return config_path_; }

 private:
  std::string config_path_, h5_, text_, policy_;
  int cpu_ = 0, worker_nice_ = 0;
  double static_cpu_fraction_ = 0;
  std::int64_t queue_depth_ = 0, gpu_batch_blocks_ = 0, gpu_sms_ = 0;
  bool quiet_ = false, no_gpu_ = false, gpu_only_ = false;
  CLI::Option *h5_option_, *text_option_, *cpu_option_, *quiet_option_, *no_gpu_option_,
      *gpu_only_option_, *policy_option_, *static_cpu_fraction_option_, *queue_depth_option_,
      *gpu_batch_blocks_option_, *worker_nice_option_, *gpu_sms_option_;
};

}  // namespace duet::app
