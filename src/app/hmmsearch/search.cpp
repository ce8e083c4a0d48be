// run_hmmsearch: the hmmsearch workload (HmmsearchWorkload) and the CPU-backed test-double
// GPU backend, run by the hybrid scheduler; results merged in database order.
#include "app/hmmsearch/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>

#include "app/hmmsearch/distributed.hpp"
#include "app/kit/cluster.hpp"
#include "app/kit/run_context.hpp"
#include "app/kit/test_double_gpu.hpp"
#include "core/error.hpp"
#include "host_simd/hmmsearch/simd_kernels.hpp"
#include "io/block_store.hpp"
#include "io/kernel_table.hpp"
#include "io/packed_database.hpp"
#include "scheduler/cpu_pool.hpp"
#include "scheduler/distributed_source.hpp"
#include "scheduler/result_sink.hpp"
#ifdef DUET_HAVE_CUDA
#include "app/hmmsearch/gpu_backend.hpp"
#include "device/gpu_info.hpp"
#endif

namespace duet::app {

CascadeSettings cascade_settings(const io::SearchConfig& config) {
  CascadeSettings s;
  s.F1 = std::min(1.0, config.F1);
  s.F2 = std::min(1.0, config.F2);
  s.F3 = std::min(1.0, config.F3);
  s.bias_filter = !config.nobias;
  if (config.max) {
    s.F1 = s.F2 = s.F3 = 1.0;
    s.bias_filter = false;
  }
  return s;
}

DomainSettings domain_settings(const io::SearchConfig& config) {
  DomainSettings s;
  s.null2 = !config.nonull2;
  s.seed = static_cast<std::uint32_t>(config.seed);
  return s;
}

std::optional<std::array<float, 2>> model_cutoffs(const HmmModel& model, const std::string& cut,
                                                  const std::string& path) {
  if (cut.empty()) return std::nullopt;
  const auto& c = cut == "ga" ? model.ga : cut == "tc" ? model.tc : model.nc;
  if (!c) {
    std::string tag = cut;
    for (char& ch : tag) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    throw InputError(path, model.line,
                     "model '" + model.name + "' has no " + tag + " line (--cut_" + cut + ")");
  }
  return c;
}

HybridOptions hybrid_options(const io::Config& config) {
  const io::SchedulerConfig& c = config.scheduler;
  HybridOptions h;
  // Policy "auto": adaptive. hmmsearch's GPU batches are large (128 M residues): under the
  // dynamic policy two feeders took half of a 500 M-residue database at once and, on part of
  // a GPU, the CPU workers waited for them (bench/RESULTS.md, "--gpu-sms").
  static_cast<RunOptions&>(h) = run_options(config, scheduler::SplitPolicy::adaptive);
  h.block_residues = static_cast<std::size_t>(c.block_residues);
  h.gpu_batch_residues = c.gpu_batch_residues;
  h.reader_threads = c.reader_threads;
  h.reuse_memory = c.reuse_memory;
  h.gpu_min_database = c.gpu_min_database;
  h.gpu_jit = config.gpu.jit;
  h.gpu_feeders = config.gpu.feeders.value_or(kHmmsearchGpuFeeders);
  h.gpu_resident = config.gpu.resident;
  return h;
}

void finish_query(QueryResult& query, const io::SearchConfig& config) {
  query.Z_from_option = config.Z.has_value();
  query.Z = config.Z ? *config.Z : static_cast<double>(query.counts.targets);
  query.reported.clear();
  // Pfam cutoffs replace every threshold: T = incT, domT = incdomT; the query's (hmmsearch)
  // or each target's (hmmscan).
  struct Thresholds {
    std::optional<double> T, incT, domT, incdomT;
    bool cutoffs = false;
  };
  const auto thresholds = [&](const TargetRecord& t) {
    Thresholds h{config.T, config.incT, config.domT, config.incdomT, false};
    const auto& c = query.cutoffs ? query.cutoffs : t.cutoffs;
    if (c) h = Thresholds{(*c)[0], (*c)[0], (*c)[1], (*c)[1], true};
    return h;
  };
  // Targets: a hit is reported by E-value (or score), included by incE (incT).
  for (std::size_t i = 0; i < query.targets.size(); ++i) {
    TargetRecord& t = query.targets[i];
    t.reported = t.included = false;
    if (!t.is_hit()) {
      t.evalue = t.scores.pvalue * query.Z;
      continue;
    }
    const Thresholds h = thresholds(t);
    const TargetDomains& d = t.domains;
    t.evalue = std::exp(d.log_pvalue) * query.Z;
    t.reported = h.T ? d.score_bits >= *h.T : t.evalue <= config.E;
    t.included = t.reported && (h.incT ? d.score_bits >= *h.incT : t.evalue <= config.incE);
    if (t.reported) query.reported.push_back(i);
  }
  // Domains of reported targets, by conditional E-value among the reported targets (domZ).
  // A domain is included only in an included target, except under Pfam cutoffs (HMMER
  // applies those to each domain on its own).
  query.domZ_from_option = config.domZ.has_value();
  query.domZ = config.domZ ? *config.domZ : static_cast<double>(query.reported.size());
  for (TargetRecord& t : query.targets) {
    const Thresholds h = thresholds(t);
    for (Domain& d : t.domains.domains) {
      d.reported = d.included = false;
      if (!t.reported) continue;
      const double c_evalue = std::exp(d.log_pvalue) * query.domZ;
      d.reported = h.domT ? d.bits >= *h.domT : c_evalue <= config.domE;
      const bool significant = h.incdomT ? d.bits >= *h.incdomT : c_evalue <= config.incdomE;
      d.included = h.cutoffs ? d.reported && significant : t.included && significant;
    }
    // HMMER's workaround of its bug h74: where clustering gave two envelopes the same
    // alignment, only the higher scoring one is reported.
    std::vector<Domain>& doms = t.domains.domains;
    if (t.domains.overlaps == 0) continue;
    for (std::size_t a = 0; a < doms.size(); ++a) {
      for (std::size_t b = a + 1; b < doms.size(); ++b) {
        if (doms[a].ali_from != doms[b].ali_from || doms[a].ali_to != doms[b].ali_to) continue;
        Domain& removed = doms[a].bits >= doms[b].bits ? doms[b] : doms[a];
        removed.reported = removed.included = false;
      }
    }
  }
  // HMMER's order: by P-value (by score with --incT or cutoffs), ties by name, then by
  // the first domain's start.
  const bool by_score = config.incT.has_value() || query.cutoffs.has_value() || !config.cut.empty();
  const auto key = [&](const TargetRecord& r) {
    return by_score ? static_cast<double>(r.domains.score_bits) : -r.domains.log_pvalue;
  };
  std::stable_sort(query.reported.begin(), query.reported.end(), [&](std::size_t a, std::size_t b) {
    const TargetRecord& x = query.targets[a];
    const TargetRecord& y = query.targets[b];
    if (key(x) != key(y)) return key(x) > key(y);
    if (const int c = x.name.compare(y.name); c != 0) return c < 0;
    return x.domains.domains.front().ali_from < y.domains.domains.front().ali_from;
  });
}

namespace {

// A pass runs at most this many models (HybridOptions::models_per_pass), and models of at
// most this many nodes in all: the kernels of a group (per worker) stay small,
// and results are written group by group, so memory does not grow with the number of
// models.
constexpr std::size_t kModelsPerPass = 64;
constexpr std::int64_t kNodesPerPass = 32768;
// Where GPUs run the search, twice as many: a GPU pass costs about 50 ms whatever its
// size (set-up, the feeder's serial steps, the post stage after the last batch), and on
// the H100 machine passes of 128 models ran 1,000 models 6 to 8% faster than passes of 64
// (bench/RESULTS.md, 2026-12-07).
constexpr std::size_t kModelsPerGpuPass = 128;
constexpr std::int64_t kNodesPerGpuPass = 65536;
// The blocks per worker a many-model pass over a small database aims at.
constexpr std::size_t kBlocksPerWorker = 8;
// ... and blocks of at least this many residues. On the H100 machine, 1,000 models against
// 20 M residues ran 13% slower split between the CPU's and the GPUs' passes than on the
// GPU alone with blocks of 156,000 residues (a CPU task of about 70 ms, which the GPU
// line's host loops waited for; bench/RESULTS.md, 2026-12-07): a model split's CPU line
// takes blocks of this size (about 7 ms a task).
constexpr std::size_t kSmallestBlock = 16384;
// A pass of at least this many nodes leaves fresh blocks to the GPUs
// (SchedulerOptions::cpu_leaves_blocks_to_gpus). On the H100 machine the hybrid of CPU
// blocks and GPU batches beat --gpu-only on ten models (about 2,500 nodes) and lost to it
// on passes of 64 (about 13,000 nodes), where a CPU block outlasts the GPU's batches and
// the CPU's post stage waits behind it (bench/RESULTS.md).
constexpr std::int64_t kNodesLeftToGpus = 8192;
// The default mode's GPUs join a search of at least this many DP cells per CPU worker
// (HybridOptions::gpu_min_cells). On the H100 machine (16 cores), 1,000 Pfam-like models
// ran faster on the CPU alone against 2.26 M residues (0.46 T cells) and faster on the GPU
// against 5 M (1.0 T cells; bench/RESULTS.md): 50 G per worker is 0.8 T on 16.
constexpr std::int64_t kGpuMinCellsPerWorker = 50'000'000'000;

// The whole-target parser states (forward_canonical.hpp's layout) of a block's targets that
// the Forward stage ran on, for the domain definition of those that pass it: the canonical
// Forward's, and the Backward's from them (FilterKernels::backward_parsers).
class ParserStates {
 public:
  // Room for the block's targets `at` and `more` (indices into the block); forgets the
  // earlier ones.
  void make_room(const Block& block, const std::vector<std::size_t>& at,
                 const std::vector<std::size_t>& more = {}) {
    offset_.assign(block.sequences(), -1);
    std::size_t size = 0;
    for (const std::vector<std::size_t>* targets : {&at, &more}) {
      for (std::size_t i : *targets) {
        offset_[i] = static_cast<std::int64_t>(size);
        size += (static_cast<std::size_t>(block.length(i)) + 1) * kParserStates;
      }
    }
    forward_.make_room(size);
    backward_.make_room(size);
    own_scales_.assign(block.sequences(), Flag{});
  }
  bool has(std::size_t i) const { return i < offset_.size() && offset_[i] >= 0; }
  // Where target i's states go, or are (has(i)).
  float* forward(std::size_t i) { return forward_.data() + offset_[i]; }
  float* backward(std::size_t i) { return backward_.data() + offset_[i]; }
  bool* own_scales(std::size_t i) { return &own_scales_[i].value; }

 private:
  struct Flag {
    bool value = false;
  };
  ScratchBuffer<float> forward_, backward_;
  std::vector<std::int64_t> offset_;  // per target of the block, -1: none
  std::vector<Flag> own_scales_;      // the Backward's (backward_parser_states)
};

// One block's records (targets that passed MSV) and pipeline counts.
struct BlockRecords {
  std::vector<TargetRecord> targets;
  PipelineCounts counts;
};

// Waits, with short sleeps, until every sink has handed over `blocks` blocks (rank 0 of a
// job: the other ranks' blocks come from its message thread); a stop request (`stop`)
// ends the wait with Interrupted.
void wait_for_blocks(const std::vector<std::unique_ptr<scheduler::ResultSink<BlockRecords>>>& sinks,
                     std::int64_t blocks, const std::atomic<bool>* stop) {
  auto pause = std::chrono::microseconds(50);
  for (const auto& sink : sinks) {
    while (sink->delivered() < blocks) {
      if (stop != nullptr && stop->load()) throw Interrupted{};
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }
}

// Turns the scores of one block into its records, defining the domains of the targets
// that passed every filter on the calling thread, a CPU worker (a device's block with such
// targets goes to the post stage: deliver); returns the number of those targets.
// `past_msv`: the block's targets that passed the MSV filter, in block order (every other
// target stopped there: counted, not recorded).
// Targets with their canonical Forward's parser states (`states`, with the kernels `k`)
// start from them: their whole-target Backward parsers run first, together.
std::int64_t add_block(const Block& block, std::span<const ScoredTarget> past_msv,
                       const SearchProfile& profile, const DomainSettings& domain_settings,
                       scheduler::ResultSink<BlockRecords>& sink, ParserStates* states = nullptr,
                       FilterKernels* k = nullptr) {
  thread_local DomainWorkspace workspace;
  std::optional<DpProfile> dp;  // made for the block's first target that passed
  const auto from_states = [&](const ScoredTarget& t) {
    return states != nullptr && k != nullptr && states->has(t.index) &&
           t.scores.stage == Stage::passed;
  };
  std::vector<BackwardParserTarget> backward;
  for (const ScoredTarget& t : past_msv) {
    if (from_states(t))
      backward.push_back({block.sequence(t.index), block.length(t.index), states->forward(t.index),
                          states->backward(t.index), states->own_scales(t.index)});
  }
  if (!backward.empty()) k->backward_parsers(backward);
  BlockRecords out;
  PipelineCounts& c = out.counts;
  c.targets = static_cast<std::int64_t>(block.sequences());
  c.residues = block.residue_count();
  std::int64_t passed = 0;
  for (const ScoredTarget& t : past_msv) {
    const std::size_t i = t.index;
    const Stage st = t.scores.stage;
    if (st <= Stage::msv) continue;
    ++c.passed_msv;
    if (st > Stage::bias) ++c.passed_bias;
    if (st > Stage::viterbi) ++c.passed_viterbi;
    if (st > Stage::forward) ++c.passed_forward, ++passed;
    TargetRecord rec;
    rec.index = block.first_sequence + static_cast<std::int64_t>(i);
    rec.name = block.name(i);
    rec.description = block.description(i);
    rec.length = block.length(i);
    rec.scores = t.scores;
    if (st == Stage::passed) {
      if (!dp) dp.emplace(profile.forward);
      WholeTargetParsers parsers;
      if (from_states(t))
        parsers = {states->forward(i), states->backward(i), *states->own_scales(i)};
      rec.domains =
          define_domains(profile, *dp, block.sequence(i), block.length(i), t.scores.forward_nats,
                         t.scores.null_nats, domain_settings, workspace, parsers);
    }
    out.targets.push_back(std::move(rec));
  }
  sink.put(block.index, std::move(out));
  return passed;
}

// The targets of `scores` (a whole block's, in block order) that passed the MSV filter.
std::vector<ScoredTarget> past_msv(const std::vector<TargetScores>& scores) {
  std::vector<ScoredTarget> out;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i].stage > Stage::msv)
      out.push_back({static_cast<std::uint32_t>(i), Remains::nothing, scores[i]});
  }
  return out;
}

// One model of a pass: its profile, where its block records go, and its SIMD kernels per
// worker, made by the worker that first needs them.
struct ModelInPass {
  const SearchProfile* profile = nullptr;
  scheduler::ResultSink<BlockRecords>* sink = nullptr;
  std::vector<std::unique_ptr<FilterKernels>> kernels;  // per worker; null until used
  // Its striped profiles, shared by every worker's kernels: made with the profile before
  // the pass (null for the scalar kernels, or until first used where not given).
  std::shared_ptr<const simd::StripedProfiles> striped;
};

// What a device left of a block for the post stage, or one part of it: the scores of the
// pass's models [first_model, first_model + per_model.size()) and what remains of each
// target.
struct DevicePostState final : PostState {
  std::size_t first_model = 0;
  std::vector<DeviceBlockScores> per_model;
};

// The CPU side: the whole cascade on one block, for every model of the pass in turn while
// the block is in cache, with per-worker kernels; the post stage finishes the targets a
// device left at Forward.
class HmmsearchWorkload final : public scheduler::Workload {
 public:
  HmmsearchWorkload(std::vector<ModelInPass> models, const CascadeSettings& settings,
                    const DomainSettings& domain_settings, int threads, simd::Isa isa)
      : models_(std::move(models)),
        settings_(settings),
        domain_settings_(domain_settings),
        isa_(isa),
        post_parts_(static_cast<std::size_t>(std::max(1, threads))),
        spare_kernels_(models_.size()) {
    for (ModelInPass& m : models_) m.kernels.resize(static_cast<std::size_t>(threads));
  }
  std::int64_t cells_per_residue() const override {
    std::int64_t cells = 0;
    for (const ModelInPass& m : models_) cells += m.profile->M;
    return cells;
  }
  // The block against each model in turn; returns the targets that passed every filter,
  // summed over the models.
  std::int64_t run_block(const Block& block, int worker) override {
    const std::size_t n = block.sequences();
    std::vector<const Residue*> dsq(n);
    std::vector<int> lengths(n);
    for (std::size_t i = 0; i < n; ++i) {
      dsq[i] = block.sequence(i);
      lengths[i] = block.length(i);
    }
    std::int64_t passed = 0;
    for (ModelInPass& m : models_)
      passed += run_model(*m.profile, kernels(m, worker), *m.sink, block, dsq, lengths);
    return passed;
  }

 private:
  // The model's kernels of this worker, made on first use.
  FilterKernels& kernels(ModelInPass& model, int worker) {
    std::unique_ptr<FilterKernels>& k = model.kernels[static_cast<std::size_t>(worker)];
    if (!k) k = make_kernels(model);
    return *k;
  }
  // A new set of the model's kernels, on the model's striped profiles (built by the first
  // thread that needs them: a worker's own set is then only its DP rows).
  std::unique_ptr<FilterKernels> make_kernels(ModelInPass& model) {
    std::shared_ptr<const simd::StripedProfiles> striped;
    {
      std::lock_guard lock(mutex_);
      striped = model.striped;
    }
    if (!striped && isa_ != simd::Isa::scalar) {
      striped = simd::stripe_profiles(*model.profile, isa_);
      std::lock_guard lock(mutex_);
      if (model.striped) {
        striped = model.striped;  // another thread's, the same
      } else {
        model.striped = striped;
      }
    }
    return std::make_unique<simd::SimdFilterKernels>(
        *model.profile, isa_, simd::ForwardGate::from(settings_), std::move(striped));
  }

  // The filters target by target, the bias filters of the targets that reach it together
  // (run_filters_together), then Forward for the block's targets that reached it, several
  // at once (forward_stage): what run_cascade gives on each.
  // `dsq` and `lengths`: the block's targets, made once for every model of the pass.
  std::int64_t run_model(const SearchProfile& profile, FilterKernels& k,
                         scheduler::ResultSink<BlockRecords>& sink, const Block& block,
                         const std::vector<const Residue*>& dsq, const std::vector<int>& lengths) {
    const std::size_t n = block.sequences();
    std::vector<TargetScores> scores(n);
    run_filters_together(profile, settings_, k, n, dsq.data(), lengths.data(), scores.data());
    std::vector<ForwardItem> at_forward;
    for (std::size_t i = 0; i < n; ++i)
      if (needs_forward(scores[i])) at_forward.push_back({i, &scores[i]});
    ParserStates& states = parser_states();
    states.make_room(block, indices(at_forward));
    forward_stage(profile, block, std::move(at_forward), k, states);
    return add_block(block, past_msv(scores), profile, domain_settings_, sink, &states, &k);
  }
  // The calling worker's parser states of its current block and model.
  static ParserStates& parser_states() {
    thread_local ParserStates states;
    return states;
  }

 public:
  // One part of what a device left of a block (deliver), model by model: the Viterbi
  // filter, Forward and domain definition of the targets left there, the other scores as
  // the device computed them.
  std::int64_t run_post(const Block& block, PostState& state, int worker) override {
    auto& part = static_cast<DevicePostState&>(state);
    std::int64_t passed = 0;
    for (std::size_t j = part.first_model; j < part.first_model + part.per_model.size(); ++j) {
      DeviceBlockScores& m = part.per_model[j - part.first_model];
      const SearchProfile& profile = *models_[j].profile;
      FilterKernels& k = kernels(models_[j], worker);
      std::vector<ForwardItem> at_forward;
      std::vector<std::size_t> at_domains;
      for (ScoredTarget& t : m.past_msv) {
        if (t.remains == Remains::viterbi)  // the device decided up to the Viterbi filter
          decide_after_viterbi(profile, settings_,
                               k.viterbi(block.sequence(t.index), block.length(t.index)), t.scores);
        if (t.remains == Remains::domains) at_domains.push_back(t.index);
        if (t.remains != Remains::nothing && needs_forward(t.scores))
          at_forward.push_back({t.index, &t.scores});
      }
      ParserStates& states = parser_states();
      states.make_room(block, indices(at_forward), at_domains);
      forward_stage(profile, block, std::move(at_forward), k, states);
      forward_states(block, at_domains, k, states);
      passed +=
          add_block(block, m.past_msv, profile, domain_settings_, *models_[j].sink, &states, &k);
    }
    return passed;
  }
  scheduler::StageWork post_work(const Block& block, const PostState& state) const override {
    scheduler::StageWork work;
    for (const DeviceBlockScores& m : static_cast<const DevicePostState&>(state).per_model) {
      for (const ScoredTarget& t : m.past_msv) {
        if (t.remains == Remains::nothing) continue;
        ++work.sequences;
        work.residues += block.length(t.index);
      }
    }
    return work;
  }
  // run_forward_stages for model `model` of the pass on whatever thread calls it (a GPU
  // feeder's host loop, shared with the CPU workers), with kernels taken from a pool: one
  // set per thread at a time.
  void forward_on_any_thread(std::size_t model, std::span<const ForwardTarget> targets,
                             std::span<TargetScores* const> outs) {
    const SearchProfile& profile = *models_[model].profile;
    std::vector<std::unique_ptr<FilterKernels>>& spare = spare_kernels_[model];
    std::unique_ptr<FilterKernels> k;
    {
      std::lock_guard lock(mutex_);
      if (!spare.empty()) {
        k = std::move(spare.back());
        spare.pop_back();
      }
    }
    if (!k) k = make_kernels(models_[model]);
    run_forward_stages(profile, settings_, *k, targets, outs);
    std::lock_guard lock(mutex_);
    spare.push_back(std::move(k));
  }
  // A device's scores of a block, one entry per model of the pass. Where no stage remains
  // for any model, domain definition included, the records are added now and this returns
  // no part. Otherwise the block goes to the post stage with all of them (on the CPU
  // workers, not the feeder's thread), in parts of consecutive models with about equal
  // work (DP cells of the targets that remain), up to one per CPU thread: a pass of many
  // models on a few blocks keeps every worker busy.
  std::vector<PostStatePtr> deliver(const Block& block,
                                    std::vector<DeviceBlockScores>&& per_model) {
    std::vector<std::int64_t> cells(per_model.size(), 0);
    std::int64_t total = 0;
    for (std::size_t j = 0; j < per_model.size(); ++j) {
      for (ScoredTarget& t : per_model[j].past_msv) {
        if (t.remains == Remains::nothing && t.scores.stage == Stage::passed)
          t.remains = Remains::domains;
        if (t.remains != Remains::nothing)
          cells[j] += static_cast<std::int64_t>(block.length(t.index)) * models_[j].profile->M;
      }
      total += cells[j];
    }
    std::vector<PostStatePtr> parts;
    if (total == 0) {
      for (std::size_t j = 0; j < models_.size(); ++j)
        add_block(block, per_model[j].past_msv, *models_[j].profile, domain_settings_,
                  *models_[j].sink);
      return parts;
    }
    const std::int64_t share =
        std::max<std::int64_t>(1, total / static_cast<std::int64_t>(post_parts_));
    std::int64_t in_part = 0;
    for (std::size_t j = 0; j < per_model.size(); ++j) {
      if (parts.empty() || in_part >= share) {
        auto part = std::make_unique<DevicePostState>();
        part->first_model = j;
        parts.push_back(std::move(part));
        in_part = 0;
      }
      auto& part = static_cast<DevicePostState&>(*parts.back());
      part.per_model.push_back(std::move(per_model[j]));
      in_part += cells[j];
    }
    return parts;
  }
  std::size_t models() const { return models_.size(); }
  const SearchProfile& profile(std::size_t model) const { return *models_[model].profile; }

 private:
  // Targets passed to the Forward kernels at once; a GPU feeder's host work is helped
  // between such packs.
  static constexpr std::size_t kForwardPack = 32;

  // A target of a block at the Forward stage, and where its scores are.
  struct ForwardItem {
    std::size_t index;  // in the block
    TargetScores* scores;
  };
  // The items' indices in the block, in their order.
  static std::vector<std::size_t> indices(const std::vector<ForwardItem>& items) {
    std::vector<std::size_t> out;
    out.reserve(items.size());
    for (const ForwardItem& item : items) out.push_back(item.index);
    return out;
  }

  // run_forward_stage for the block's targets `at` (in block order), kForwardPack at a
  // time, longest first so that the targets of a pack have similar lengths (the kernel
  // computes several side by side); their parser states go to `states` (room made).
  void forward_stage(const SearchProfile& profile, const Block& block, std::vector<ForwardItem> at,
                     FilterKernels& k, ParserStates& states) {
    std::stable_sort(at.begin(), at.end(), [&](const ForwardItem& a, const ForwardItem& b) {
      return block.length(a.index) > block.length(b.index);
    });
    std::vector<ForwardTarget> targets;
    std::vector<TargetScores*> outs;
    for (std::size_t start = 0; start < at.size(); start += kForwardPack) {
      const std::size_t end = std::min(at.size(), start + kForwardPack);
      targets.clear();
      outs.clear();
      for (std::size_t j = start; j < end; ++j) {
        const std::size_t i = at[j].index;
        targets.push_back({block.sequence(i), block.length(i), states.forward(i)});
        outs.push_back(at[j].scores);
      }
      run_forward_stages(profile, settings_, k, targets, outs);
    }
  }

  // The Forward's parser states of the block's targets `at` that passed every filter on a
  // device (which keeps no states): the canonical Forward again, on the CPU's packed
  // kernel, for domain definition.
  static void forward_states(const Block& block, const std::vector<std::size_t>& at,
                             FilterKernels& k, ParserStates& states) {
    if (at.empty()) return;
    std::vector<ForwardTarget> targets;
    for (std::size_t i : at)
      targets.push_back({block.sequence(i), block.length(i), states.forward(i)});
    std::vector<float> scores(targets.size());
    k.forward_many(targets, scores);
  }

  std::vector<ModelInPass> models_;
  CascadeSettings settings_;
  DomainSettings domain_settings_;
  simd::Isa isa_;
  std::size_t post_parts_;  // a delivered block's post stage in at most this many parts
  // forward_on_any_thread's pool, per model.
  std::vector<std::vector<std::unique_ptr<FilterKernels>>> spare_kernels_;
  std::mutex mutex_;  // guards spare_kernels_
};

// What the test-double GPU (kit/test_double_gpu.hpp) computed of a block: each model's
// scores, and the targets left to the CPU.
struct TestDoubleBlock {
  std::vector<DeviceBlockScores> per_model;
  std::int64_t survivors = 0;
};

// The test double's device work: the filters before Forward (run_filters) with the CPU
// reference kernels, as a host loop per model as the real backend shares its host work;
// on blocks of odd index only MSV and the bias filter, leaving the Viterbi filter to the
// CPU as a real GPU does with too few targets to fill it; on every fourth block also the
// Forward stage (reference kernels, on the feeder's thread), so that the CPU gets targets
// that passed every filter on the device and only need their domains, as a real GPU's
// canonical Forward leaves them.
TestDoubleBlock test_double_block(const HmmsearchWorkload& workload,
                                  const CascadeSettings& settings, const Block& b,
                                  const scheduler::HostLoopRunner& run_host_loop) {
  TestDoubleBlock result;
  result.per_model.resize(workload.models());
  const bool viterbi_to_cpu = b.index % 2 == 1;
  const bool forward_on_device = b.index % 4 == 2;
  for (std::size_t j = 0; j < result.per_model.size(); ++j) {
    const SearchProfile& profile = workload.profile(j);
    std::vector<TargetScores> scores(b.sequences());
    std::vector<Remains> remains(b.sequences(), Remains::nothing);
    run_host_loop(b.sequences(), 16, [&](std::size_t i) {
      const Residue* dsq = b.sequence(i);
      const int L = b.length(i);
      const NextStage next = decide_through_bias(
          profile, settings, dsq, L, msv_filter_reference(profile.msv, dsq, L), scores[i]);
      if (next != NextStage::viterbi) return;
      if (viterbi_to_cpu) {
        remains[i] = Remains::viterbi;
      } else {
        decide_after_viterbi(profile, settings, viterbi_filter_reference(profile.viterbi, dsq, L),
                             scores[i]);
      }
    });
    std::unique_ptr<ReferenceKernels> forward;
    for (std::size_t i = 0; i < b.sequences(); ++i) {
      if (remains[i] == Remains::nothing && needs_forward(scores[i])) {
        if (forward_on_device) {
          if (!forward) forward = std::make_unique<ReferenceKernels>(profile);
          run_forward_stage(profile, settings, *forward, b.sequence(i), b.length(i), scores[i]);
        } else {
          remains[i] = Remains::forward;
        }
      }
      if (remains[i] != Remains::nothing) ++result.survivors;
    }
    // Only the targets past MSV go back, as from a real GPU.
    std::vector<ScoredTarget>& out = result.per_model[j].past_msv;
    out = past_msv(scores);
    for (ScoredTarget& t : out) t.remains = remains[t.index];
  }
  return result;
}

// The devices a pass runs on: the CPU workers and the GPUs' feeders together (its blocks
// split between them), the CPU workers alone, or the GPUs' feeders with the CPU workers
// serving only their post stage and host loops (the two lines of a model split).
enum class PassOn { all, cpu, gpus };

// The most models, and nodes in all, that a pass runs.
struct PassSize {
  std::size_t models;
  std::int64_t nodes;
};

// One past the last model of the pass that starts at model `first`: models of its
// alphabet within `size`, at least one.
std::size_t group_end(const std::vector<HmmModel>& models, std::size_t first,
                      const PassSize& size) {
  std::size_t last = first + 1;
  std::int64_t nodes = models[first].M;
  while (last < models.size() && models[last].alphabet == models[first].alphabet &&
         last - first < size.models && nodes + models[last].M <= size.nodes) {
    nodes += models[last].M;
    ++last;
  }
  return last;
}

// Whether a model split's GPU line can start: waits until device::start_gpu_warmup's
// thread has set up each real GPU of `devices` (test doubles need none), or `give_up`
// says the line is no longer needed. A GPU that cannot be used leaves every pass to the
// CPU line, with the hybrid's warning.
bool gpus_ready(const std::vector<int>& devices, const HybridOptions& hybrid,
                const std::function<bool()>& give_up) {
  for (int d : devices) {
    for (;;) {
      std::string problem;
      const scheduler::GpuBackend::Readiness readiness = warmup_readiness(d, problem);
      if (readiness == scheduler::GpuBackend::Readiness::ready) break;
      if (readiness == scheduler::GpuBackend::Readiness::unavailable) {
        if (hybrid.warnings) {
          std::fprintf(stderr,
                       "duet: warning: GPU %d cannot be used (%s); the CPU goes on without it\n", d,
                       problem.c_str());
        }
        return false;
      }
      if (give_up() || (hybrid.stop != nullptr && hybrid.stop->load())) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return true;
}

}  // namespace

SearchRun run_hmmsearch(const std::vector<HmmModel>& models, const std::string& database_path,
                        const io::Config& config, const HybridOptions& hybrid,
                        TargetStream* stream) {
  const InputFile database(database_path, hybrid.stop);
  return run_hmmsearch(models, database, config, hybrid, stream);
}

SearchRun run_hmmsearch(const std::vector<HmmModel>& models, const InputFile& database,
                        const io::Config& config, const HybridOptions& hybrid,
                        TargetStream* stream) {
  using Clock = std::chrono::steady_clock;
  const auto run_start = Clock::now();
  // GPUs: the debug test double, or the real ones of a CUDA build (gpu_backend.hpp).
  std::vector<int> devices;
  std::optional<io::KernelTable> kernel_table;
  // The default mode on a small search, a small database that few models' nodes cross: the
  // CPU alone (not even listing the GPUs, which starts CUDA). A FIFO's size is unknown: the
  // GPUs may join.
  const std::uint64_t text = database.estimated_text_bytes();
  const std::int64_t nodes = total_nodes(models);
  const int cores = usable_cores();
  const std::int64_t min_cells =
      hybrid.gpu_min_cells >= 0
          ? hybrid.gpu_min_cells
          : kGpuMinCellsPerWorker * (config.run.cpu > 0 ? config.run.cpu : cores);
  const bool small_search =
      hybrid.gpu == HybridOptions::Gpu::auto_detect && hybrid.test_gpus == 0 &&
      hybrid.gpu_devices.empty() && database.rereadable() && text < hybrid.gpu_min_database &&
      static_cast<double>(nodes) * static_cast<double>(text) < static_cast<double>(min_cells);
  if (hybrid.gpu != HybridOptions::Gpu::off && hybrid.test_gpus == 0 && !small_search) {
#ifdef DUET_HAVE_CUDA
    devices = resolve_gpu_devices(hybrid.gpu_devices);
    // A rank of a job shares its host's GPUs with the host's other ranks, unless --gpus
    // named them.
    if (hybrid.gpu_devices.empty()) devices = rank_gpus(devices);
    phase_time("listed GPUs");
    // A bad strategy name or kernel table fails before the search.
    if (!hybrid.gpu_strategy.empty()) (void)device::parse_gpu_strategy(hybrid.gpu_strategy);
    if (!devices.empty() && !hybrid.gpu_kernel_table.empty()) {
      kernel_table = io::load_kernel_table(hybrid.gpu_kernel_table);
    }
#else
    if (!hybrid.gpu_devices.empty())
      throw UsageError("--gpus: this build has no CUDA support (no GPU can be used)");
#endif
  }
  const int gpus = hybrid.gpu == HybridOptions::Gpu::off || small_search ? 0
                   : hybrid.test_gpus > 0                                ? hybrid.test_gpus
                                          : static_cast<int>(devices.size());
  // Feeder threads: one per test double, hybrid.gpu_feeders per real GPU.
  const int feeders_per_gpu = std::max(1, hybrid.gpu_feeders);
  const int feeders = hybrid.test_gpus > 0 ? gpus : gpus * feeders_per_gpu;
  if (hybrid.gpu == HybridOptions::Gpu::only && gpus == 0) {
#ifdef DUET_HAVE_CUDA
    throw UsageError("--gpu-only: no GPU available (" + device::list_gpus().problem + ")");
#else
    throw UsageError("--gpu-only: no GPU available (this build has no CUDA support)");
#endif
  }
  scheduler::SchedulerOptions options =
      scheduler_options(hybrid, config.run.cpu > 0 ? config.run.cpu : std::max(1, cores - gpus),
                        kHmmsearchGpuBatchBlocks);
  options.gpu_batch_residues = hybrid.gpu_batch_residues;

  // The model split (HybridOptions::model_split): with GPUs, many models of one alphabet
  // against a database that stays in memory (or a packed one) run as lines of passes at
  // once, the CPU workers' (none with --gpu-only) and HybridOptions::gpu_lines of the GPUs',
  // each taking the next group of models when it is free (run_split below), rather than
  // each pass splitting its blocks between them: each device runs whole passes at its own
  // pace, the CPU's on many small blocks, the GPUs' on few large ones, and neither waits at
  // the other's end of pass; with two GPU lines, one's batches run on the GPU while the CPU
  // runs the other's post stage.
  const bool one_alphabet = std::all_of(models.begin(), models.end(), [&](const HmmModel& m) {
    return m.alphabet == models.front().alphabet;
  });
  const PassSize cpu_pass{hybrid.models_per_pass > 0 ? hybrid.models_per_pass : kModelsPerPass,
                          hybrid.nodes_per_pass > 0 ? hybrid.nodes_per_pass : kNodesPerPass};
  const PassSize gpu_pass{hybrid.models_per_pass > 0 ? hybrid.models_per_pass : kModelsPerGpuPass,
                          hybrid.nodes_per_pass > 0 ? hybrid.nodes_per_pass : kNodesPerGpuPass};
  // With --gpu-only, a split of GPU lines alone, where there are several.
  const bool cpu_line = !options.gpu_only;
  const int gpu_lines = std::max(1, hybrid.gpu_lines);
  const bool model_split =
      hybrid.model_split && (cpu_line || gpu_lines > 1) && gpus > 0 && hybrid.cluster == nullptr &&
      options.policy != scheduler::SplitPolicy::static_fraction && one_alphabet &&
      models.size() > 1 && group_end(models, 0, cpu_line ? cpu_pass : gpu_pass) < models.size() &&
      database.rereadable() &&
      (io::PackedDatabase::is_packed(database) || text <= hybrid.reuse_memory);
  // The database as blocks, kept in memory across queries within the reuse budget.
  io::ReaderOptions reader;
  reader.block_residues = hybrid.block_residues;
  if ((gpus == 0 || (model_split && cpu_line)) && models.size() > 1 &&
      hybrid.block_residues == HybridOptions{}.block_residues) {
    // Many models on a small database (a proteome), with the default block size: the
    // blocks are the only parallelism of a pass, so there should be several per worker. The
    // database's size is estimated from the file's (gzip: about a third of the text); blocks stay
    // at least 16,384 residues.
    const auto estimate = static_cast<std::size_t>(database.estimated_text_bytes());
    const std::size_t per_worker =
        estimate / (kBlocksPerWorker * static_cast<std::size_t>(options.cpu_workers));
    if (estimate > 0)
      reader.block_residues =
          std::clamp<std::size_t>(per_worker, kSmallestBlock, hybrid.block_residues);
    // A model split's CPU line shares the cores with the GPU line's host work, whose loops
    // wait for a worker to end its task: the CPU line's tasks stay short whatever the
    // database's size.
    if (model_split && cpu_line) reader.block_residues = kSmallestBlock;
  }
  reader.threads = hybrid.reader_threads;
  reader.consumers = options.cpu_workers + feeders;
  if (hybrid.cluster != nullptr) {
    // Every rank reads the same blocks (the chunks are block numbers): rank 0's shape.
    reader.block_residues = static_cast<std::size_t>(
        hybrid.cluster->agree(static_cast<std::int64_t>(reader.block_residues)));
    reader.consumers = static_cast<int>(hybrid.cluster->agree(reader.consumers));
    // A packed database is one file for the whole job: rank 0 reads all of it to verify
    // its checksums (a corrupt file fails rank 0, and the job writes nothing); the other
    // ranks read only their chunks.
    reader.verify_packed = hybrid.cluster->rank() == 0;
  }
  reader.stop = hybrid.stop;
  const std::uint64_t reuse = models.size() > 1 ? hybrid.reuse_memory : 0;
  std::unique_ptr<io::BlockStore> store;
#ifdef DUET_HAVE_CUDA
  // Several models: database blocks kept on each GPU across them (made with the block
  // store, whose block indices they are keyed by; declared after it, ended before it).
  std::vector<std::unique_ptr<device::GpuResidentStore>> resident;
  const bool keep_resident = models.size() > 1 && hybrid.gpu_resident.value_or(1) != 0;
  // Each GPU feeder's engines, kept across passes (they use the resident stores: declared
  // after them, ended before them).
  std::vector<std::vector<EngineSlot>> engines;
#endif

  const CascadeSettings settings = cascade_settings(config.search);
  const simd::Isa isa = simd::isa_from_name(config.run.isa);  // UsageError if the CPU lacks it
  // A job of ranks (distributed.hpp): the others' blocks come to rank 0 as they end.
  Cluster* const job = hybrid.cluster;
  const bool to_root = job != nullptr && job->rank() != 0;
  RemoteBlocks remote;
  struct Receiving {  // rank 0 takes the others' messages while the search runs
    Cluster* job;
    ~Receiving() {
      if (job != nullptr) job->receive_at_root(nullptr);
    }
  } receiving{job != nullptr && !to_root ? job : nullptr};
  if (receiving.job != nullptr)
    job->receive_at_root([&remote](std::string&& bytes) { remote.receive(std::move(bytes)); });
  SearchRun run;
  run.gpus_skipped_small_database = small_search;
  run.test_double_gpus = hybrid.test_gpus > 0 && gpus > 0;
  [[maybe_unused]] std::atomic<bool> jit_failure_said{false};  // CUDA builds only
  if (!devices.empty())
    run.gpu_kernel_table = kernel_table ? hybrid.gpu_kernel_table : "built-in rule";
  // The passes: a pass runs a group of models over the database. A CPU worker runs each
  // block against every model of the group while the block is in cache, and a GPU feeder
  // each batch against every model of the group on one engine, so that per-pass costs
  // (threads, hand-out, the kept blocks' walk, the GPU's set-up) are shared by the group.
  // Every rank of a job groups the models as rank 0 does (its passes are the job's).
  const bool gpu_passes = job != nullptr ? job->agree(gpus > 0 ? 1 : 0) != 0 : gpus > 0;
  // The models' results, by model; each pass fills its models'.
  std::vector<QueryResult> results(models.size());
  std::atomic<int> pass_number{0};
  std::atomic<bool> stopped{false};
  // Runs the pass of models [first, last) on `on`'s devices, over the store's next pass or
  // `side` (BlockStore::side_pass), the GPUs' passes on the engines of GPU line `line`
  // (run_split); false where the search was stopped.
  const auto run_pass = [&](std::size_t first, std::size_t last, PassOn on, BlockSource* side,
                            int line) -> bool {
    const auto query_start = Clock::now();
    const HmmModel& hmm = models[first];
    const Background bg = Background::for_alphabet(*hmm.alphabet);
    const std::size_t group = last - first;
    const bool with_gpus = on != PassOn::cpu;
    const int pass_feeders = with_gpus ? feeders : 0;
    scheduler::SchedulerOptions pass_options = options;
    if (on == PassOn::gpus) {
      // A GPU line of a model split: the CPU workers serve its post stage and host loops
      // before the CPU line's blocks; the CPU line shows the progress, or without one the
      // first GPU line.
      pass_options.gpu_only = true;
      pass_options.favoured = true;
      pass_options.progress = options.progress && !cpu_line && line == 0;
    }
    // The group's profiles, configured and striped on the CPU workers' share of the cores.
    // (Striped lazily instead, by the first worker that needs them, every worker starting
    // the pass striped each model at once: the same work up to once per worker.)
    std::vector<SearchProfile> profiles(group);
    std::vector<std::shared_ptr<const simd::StripedProfiles>> striped(group);
    scheduler::parallel_for_each(options.cpu_workers, group, [&](std::size_t j) {
      profiles[j] = build_search_profile(models[first + j], bg);
      if (isa != simd::Isa::scalar) striped[j] = simd::stripe_profiles(profiles[j], isa);
    });
    phase_time("profiles built");
    std::vector<QueryResult> queries(group);
    std::vector<std::unique_ptr<scheduler::ResultSink<BlockRecords>>> sinks;
    std::vector<ModelInPass> in_pass;
    const int number = pass_number++;
    for (std::size_t j = 0; j < group; ++j) {
      const HmmModel& model = models[first + j];
      QueryResult& query = queries[j];
      query.name = model.name;
      query.accession = model.accession;
      query.description = model.description;
      query.M = model.M;
      query.cutoffs = model_cutoffs(model, config.search.cut, "the query model file");
      query.pass_first = first;
      query.pass_models = group;
      const std::size_t query_index = first + j;
      if (stream != nullptr) stream->begin_query(query_index);
      scheduler::ResultSink<BlockRecords>::Consumer consume =
          [&query, stream, query_index](std::int64_t, BlockRecords&& block) {
            if (stream != nullptr) stream->targets(query_index, block.targets);
            query.counts += block.counts;
            for (auto& t : block.targets) query.targets.push_back(std::move(t));
          };
      if (to_root) {
        consume = [job, number, query_index](std::int64_t index, BlockRecords&& block) {
          job->send_to_root(
              pack_streamed_block(number, query_index, index, block.counts, block.targets));
        };
      }
      sinks.push_back(std::make_unique<scheduler::ResultSink<BlockRecords>>(std::move(consume)));
    }
    // Rank 0 of a job: the pass's remote blocks stop coming into `sinks` before they go,
    // however the pass ends (declared after them).
    struct ClosesPass {
      RemoteBlocks& remote;
      ~ClosesPass() { remote.close_pass(); }
    } closes_pass{remote};
    for (std::size_t j = 0; j < group; ++j)
      in_pass.push_back({&profiles[j], sinks[j].get(), {}, std::move(striped[j])});
    QueryResult& query = queries.front();
    HmmsearchWorkload workload(std::move(in_pass), settings, domain_settings(config.search),
                               options.cpu_workers + pass_feeders, isa);
    std::vector<std::unique_ptr<TestDoubleGpu<TestDoubleBlock>>> doubles;
    std::vector<scheduler::GpuBackend*> backends;
    for (int g = 0; g < hybrid.test_gpus && gpus > 0 && with_gpus; ++g) {
      doubles.push_back(std::make_unique<TestDoubleGpu<TestDoubleBlock>>(
          g, "msv+bias+viterbi",
          [&workload, &settings](const Block& b, const scheduler::HostLoopRunner& run_host_loop) {
            return test_double_block(workload, settings, b, run_host_loop);
          },
          [&workload](const Block& b, TestDoubleBlock&& result) {
            const std::int64_t survivors = result.survivors;
            return scheduler::GpuBlockOutcome{workload.deliver(b, std::move(result.per_model)),
                                              survivors};
          }));
      backends.push_back(doubles.back().get());
    }
#ifdef DUET_HAVE_CUDA
    std::vector<std::unique_ptr<HmmsearchGpuBackend>> devices_in_use;
    const auto deliver = [&workload](const Block& b, std::vector<DeviceBlockScores>&& per_model) {
      return workload.deliver(b, std::move(per_model));
    };
    const auto forward_on_host = [&workload](std::size_t model,
                                             std::span<const ForwardTarget> targets,
                                             std::span<TargetScores* const> outs) {
      workload.forward_on_any_thread(model, targets, outs);
    };
    std::vector<GpuPassModel> gpu_models;
    if (!devices.empty() && with_gpus) {
      for (std::size_t j = 0; j < group; ++j) {
        const io::KernelTableRow plan = io::plan_kernels(kernel_table ? &*kernel_table : nullptr,
                                                         queries[j].M, hybrid.gpu_strategy);
        device::GpuKernelChoice kernels{plan.msv_group_threads,
                                        device::parse_gpu_strategy(plan.viterbi_strategy)};
        kernels.jit = hybrid.gpu_jit;
        gpu_models.push_back({first + j, &profiles[j], kernels});
      }
    }
    for (std::size_t g = 0; g < devices.size() && with_gpus; ++g) {
      for (int f = 0; f < feeders_per_gpu; ++f) {
        devices_in_use.push_back(std::make_unique<HmmsearchGpuBackend>(
            devices[g], f, gpu_models, settings, deliver, forward_on_host,
            engines[(static_cast<std::size_t>(line) * devices.size() + g) *
                        static_cast<std::size_t>(feeders_per_gpu) +
                    static_cast<std::size_t>(f)],
            kernel_table ? kernel_table->tuning : io::GpuTuning{},
            resident.empty() ? nullptr : resident[g].get()));
        backends.push_back(devices_in_use.back().get());
      }
    }
    if (!devices_in_use.empty()) {
      for (std::size_t j = 0; j < group; ++j) {
        const device::GpuKernelChoice used = devices_in_use.front()->kernel_choice(j);
        queries[j].gpu_kernels = "msv_group_threads=" + std::to_string(used.msv_group_threads) +
                                 " viterbi=" + device::gpu_strategy_name(used.viterbi);
      }
    }
#endif
    phase_time("pass starts");
    std::optional<io::BlockStore::Pass> pass;
    if (side == nullptr) pass.emplace(store->begin_pass());
    // A rank of a job runs the chunks it is handed; the others' blocks pass its sinks by,
    // except on rank 0, where they come from their ranks (RemoteBlocks).
    std::optional<scheduler::DistributedSource> share;
    if (job != nullptr) {
      // The pass's blocks, from the database's residues where known (a packed database,
      // or after a first pass), else from the file's size.
      std::int64_t residues = store->total_residues();
      if (residues == 0 && store->packed() != nullptr) residues = store->packed()->residues();
      if (residues == 0) residues = static_cast<std::int64_t>(database.estimated_text_bytes());
      const auto expected =
          residues / static_cast<std::int64_t>(std::max<std::size_t>(1, reader.block_residues));
      std::function<void(const Block&)> skipped;
      if (to_root) {
        skipped = [&sinks](const Block& block) {
          for (auto& sink : sinks) sink->skip(block.index);
        };
      } else {
        remote.open_pass(number, [&sinks, first](StreamedBlock&& b) {
          sinks.at(b.query - first)->put(b.block, BlockRecords{std::move(b.targets), b.counts});
        });
      }
      share.emplace(*pass, job->chunks(), number, expected, std::move(skipped));
    }
    BlockSource& source = share  ? static_cast<BlockSource&>(*share)
                          : side ? *side
                                 : static_cast<BlockSource&>(*pass);
    // A pass of many nodes: the CPU workers leave fresh blocks to the GPUs while these take
    // them and run the post stage (the GPUs' survivors) instead. (A rank of a job keeps the
    // plain rule: its chunks come by request.)
    pass_options.cpu_leaves_blocks_to_gpus =
        job == nullptr && workload.cells_per_residue() >= kNodesLeftToGpus;
    query.schedule = scheduler::run_blocks(source, workload, backends, pass_options);
    if (job != nullptr && !to_root && !query.schedule.stopped) {
      // Rank 0: the pass ends when every block's records are in, the others' too.
      wait_for_blocks(sinks, share->blocks_read(), hybrid.stop);
    }
    phase_time("pass ended");
#ifdef DUET_HAVE_CUDA
    for (std::size_t j = 0; j < group; ++j) {
      for (const auto& d : devices_in_use) {
        const HmmsearchGpuBackend::Residency r = d->residency(j);
        queries[j].gpu_resident_residues += r.resident;
        queries[j].gpu_uploaded_residues += r.uploaded;
        queries[j].gpu_kept_residues += r.kept;
      }
      if (!hybrid.gpu_jit || devices_in_use.empty()) continue;
      // Every GPU's engine asked NVRTC for the same kernels; the first says what it got.
      // A failure is said once per run (the search goes on with the static kernels).
      const device::GpuJitInfo* jit = nullptr;
      for (const auto& d : devices_in_use) {
        if (d->jit_info(j) != nullptr && (jit == nullptr || !d->jit_info(j)->used))
          jit = d->jit_info(j);
      }
      if (jit != nullptr && jit->used) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.3f", jit->seconds);
        queries[j].gpu_jit = "msv_exact (" + jit->origin + " " + seconds + " s)";
      } else if (jit != nullptr) {
        queries[j].gpu_jit = "static kernels: " + jit->failure;
        if (hybrid.warnings && !jit_failure_said.exchange(true)) {
          std::fprintf(stderr,
                       "duet: --gpu-jit: no run-time specialised kernel for %s (%s); the static "
                       "kernels run, with the same results\n",
                       queries[j].name.c_str(), jit->failure.c_str());
        }
      }
    }
#endif
    if (query.schedule.stopped) {
      stopped = true;
      return false;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - query_start).count();
    // The pass's summary for every model of it; its trace rows with the first only.
    scheduler::RunSummary shared_summary = query.schedule;
    shared_summary.trace.clear();
    for (std::size_t j = 0; j < group; ++j) {
      if (sinks[j]->held_back() != 0)
        throw std::logic_error("scheduler: results of some blocks are missing");
      if (j > 0) queries[j].schedule = shared_summary;
      finish_query(queries[j], config.search);
      if (stream != nullptr) stream->end_query(first + j, queries[j]);
      // A model's share of the pass's time, by its share of the nodes.
      queries[j].seconds = seconds * static_cast<double>(queries[j].M) /
                           static_cast<double>(workload.cells_per_residue());
      results[first + j] = std::move(queries[j]);
    }
    phase_time("query done");
    return true;
  };
  // The store for the models from `first` on: made anew for another alphabet.
  const auto store_for = [&](const HmmModel& hmm) {
    if (store && &store->alphabet() == hmm.alphabet) return;
    if (store && !database.rereadable()) {
      throw InputError(database.path(), 0,
                       "cannot be read twice (a pipe or FIFO), and the models are of two "
                       "alphabets, each needing its own pass: give a regular file");
    }
#ifdef DUET_HAVE_CUDA
    engines.clear();
    resident.clear();  // blocks of another alphabet's codes
#endif
    store.reset();  // frees what a store of another alphabet kept
    store =
        std::make_unique<io::BlockStore>(database, *hmm.alphabet, reader, reuse, models.size() > 1);
#ifdef DUET_HAVE_CUDA
    for (int d : devices) {
      if (keep_resident)
        resident.push_back(
            std::make_unique<device::GpuResidentStore>(d, hybrid.gpu_resident.value_or(0)));
    }
    engines.resize(static_cast<std::size_t>(model_split ? gpu_lines : 1) * devices.size() *
                   static_cast<std::size_t>(feeders_per_gpu));
#endif
  };
  // The model split from model `from` on (model_split above): lines of passes at once, each
  // taking the next group of models when it is free: the CPU workers' on this thread
  // (passes of cpu_pass over the store's passes; none with --gpu-only) and gpu_lines lines
  // of GPU passes, each on a thread and engines of its own (passes of gpu_pass over side
  // passes of large blocks; the CPU workers serve their post stage and host loops first).
  // Near the end the CPU line takes only its share of what is left, by the lines' measured
  // rates, so that all end together. Returns the first model no line ran: models.size(),
  // or less where the GPUs could not start and no CPU line ran the rest; nothing where the
  // store cannot give a side pass (nothing was run).
  const auto run_split = [&](std::size_t from) -> std::optional<std::size_t> {
    if (store->side_pass(hybrid.block_residues) == nullptr) return std::nullopt;  // copies
    std::vector<std::int64_t> nodes_before(models.size() + 1, 0);  // prefix sums of M
    for (std::size_t m = 0; m < models.size(); ++m)
      nodes_before[m + 1] = nodes_before[m] + models[m].M;
    std::mutex mutex;         // guards what follows
    std::size_t next = from;  // the first model no pass has taken
    int gpu_lines_on = gpu_lines;
    bool abandon = false;
    // Nodes run and seconds taken, the GPU lines' summed.
    double gpu_nodes = 0, gpu_seconds = 0, cpu_nodes = 0, cpu_seconds = 0;
    std::exception_ptr gpu_failure;
    const auto gpu_line = [&](int line) {
      std::exception_ptr failure;
      try {
        const auto give_up = [&] {
          std::lock_guard lock(mutex);
          return next == models.size() || abandon;
        };
        if (gpus_ready(devices, hybrid, give_up)) {
          for (;;) {
            std::size_t first = 0, last = 0;
            {
              std::lock_guard lock(mutex);
              if (next == models.size() || abandon) break;
              first = next;
              last = next = group_end(models, first, gpu_pass);
            }
            const std::unique_ptr<BlockSource> side = store->side_pass(hybrid.block_residues);
            const auto start = Clock::now();
            if (!run_pass(first, last, PassOn::gpus, side.get(), line)) break;
            std::lock_guard lock(mutex);
            gpu_nodes += static_cast<double>(nodes_before[last] - nodes_before[first]);
            gpu_seconds += std::chrono::duration<double>(Clock::now() - start).count();
          }
        }
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard lock(mutex);
      if (failure && !gpu_failure) gpu_failure = failure;
      if (failure) abandon = true;  // the other lines end after their passes
      --gpu_lines_on;
    };
    // The GPU lines are joined however this thread leaves (an exception: after their
    // passes).
    struct JoinsLines {
      std::vector<std::thread> threads;
      std::mutex& mutex;
      bool& abandon;
      void join() {
        for (std::thread& t : threads) {
          if (t.joinable()) t.join();
        }
      }
      ~JoinsLines() {
        {
          std::lock_guard lock(mutex);
          abandon = true;
        }
        join();
      }
    } lines{{}, mutex, abandon};
    for (int line = 0; line < gpu_lines; ++line) lines.threads.emplace_back(gpu_line, line);
    for (bool gpus_take_the_rest = false; cpu_line;) {
      std::size_t first = 0, last = 0;
      {
        std::lock_guard lock(mutex);
        if (next == models.size() || gpu_failure) break;  // a failed GPU line fails the run
        first = next;
        PassSize size = cpu_pass;
        if (gpu_lines_on > 0 && gpu_seconds > 0 && cpu_seconds > 0) {
          // The CPU line's share of the nodes left, at the lines' rates (the GPU lines'
          // own rate times those still running).
          const double cpu_rate = cpu_nodes / cpu_seconds,
                       gpu_rate = gpu_nodes / gpu_seconds * gpu_lines_on;
          const auto left = static_cast<double>(nodes_before.back() - nodes_before[first]);
          size.nodes = std::min(size.nodes,
                                static_cast<std::int64_t>(left * cpu_rate / (cpu_rate + gpu_rate)));
          gpus_take_the_rest = models[first].M > size.nodes;
        }
        if (!gpus_take_the_rest) last = next = group_end(models, first, size);
      }
      if (gpus_take_the_rest) {
        // The GPU lines end the search; if they stop early, the CPU runs what they left.
        lines.join();
        gpus_take_the_rest = false;
        continue;
      }
      const auto start = Clock::now();
      if (!run_pass(first, last, PassOn::cpu, nullptr, 0)) break;
      std::lock_guard lock(mutex);
      cpu_nodes += static_cast<double>(nodes_before[last] - nodes_before[first]);
      cpu_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }
    lines.join();
    if (gpu_failure) std::rethrow_exception(gpu_failure);
    return next;
  };
  // A model split over FASTA: the first pass reads the database while the GPUs start (on
  // the CPU alone where a CPU line runs), then the split runs the rest if the store kept
  // the whole database. A packed database is split from the start.
  bool split = model_split;
  for (std::size_t first = 0; first < models.size() && !stopped;) {
    store_for(models[first]);
    if (split && (first > 0 || store->packed() != nullptr)) {
      split = false;  // once; where the database is not kept whole, every pass reads it
      if (const std::optional<std::size_t> left = run_split(first)) {
        first = *left;
        continue;
      }
    }
    const bool cpu_alone = split && cpu_line;
    const std::size_t last =
        group_end(models, first, cpu_alone || !gpu_passes ? cpu_pass : gpu_pass);
    if (!run_pass(first, last, cpu_alone ? PassOn::cpu : PassOn::all, nullptr, 0)) break;
    first = last;
  }
  if (stopped) {
    run.stopped = true;
    return run;
  }
  run.queries = std::move(results);
  phase_time("queries done");
  run.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  return run;
}

}  // namespace duet::app
