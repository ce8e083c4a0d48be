// Fuzz target: the pair-HMM input readers (core/pairhmm/pairhmm_input.hpp, read_input) in both
// formats and with the format detected. Bad input must end in duet::InputError; an input
// it accepts must hold what the header promises (bases A, C, G, T, N; four Phred
// qualities per base, 0 to 93; reads and haplotypes not empty; one expected value per
// pair in the gkl format).
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "core/pairhmm/pairhmm_input.hpp"
#include "fuzz_support.hpp"

namespace {

using duet::pairhmm::Format;

bool holds_promises(const duet::pairhmm::Input& input) {
  auto bases_ok = [](const duet::pairhmm::Bytes& bases) {
    if (bases.empty()) return false;
    for (const std::uint8_t b : bases)
      if (duet::pairhmm::base_symbol(b) == '?') return false;
    return true;
  };
  auto qualities_ok = [](const duet::pairhmm::Bytes& q, std::size_t n) {
    if (q.size() != n) return false;
    for (const std::uint8_t x : q)
      if (x > 93) return false;
    return true;
  };
  for (const duet::pairhmm::Batch& batch : input.batches) {
    if (batch.reads.empty() || batch.haplotypes.empty()) return false;
    for (const duet::pairhmm::Read& r : batch.reads) {
      const std::size_t n = r.bases.size();
      if (!bases_ok(r.bases) || !qualities_ok(r.base_quality, n) ||
          !qualities_ok(r.insertion_quality, n) || !qualities_ok(r.deletion_quality, n) ||
          !qualities_ok(r.gcp_quality, n))
        return false;
    }
    for (const duet::pairhmm::Haplotype& h : batch.haplotypes)
      if (!bases_ok(h.bases)) return false;
  }
  if (input.format == Format::gkl &&
      static_cast<std::int64_t>(input.expected.size()) != input.pairs())
    return false;
  return input.pairs() > 0 && static_cast<std::int64_t>(input.pair_list().size()) == input.pairs();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = duet::fuzz::write_input("pairs.txt", duet::fuzz::as_text(data, size));
  for (const Format format : {Format::automatic, Format::gkl, Format::batch}) {
    try {
      const duet::pairhmm::Input input = duet::pairhmm::read_input(path, format);
      if (!holds_promises(input))
        duet::fuzz::finding(std::string("accepted input breaks the header's promises (format ") +
                            duet::pairhmm::format_name(format) + ")");
    } catch (const duet::InputError&) {
    }
  }
  return 0;
}
