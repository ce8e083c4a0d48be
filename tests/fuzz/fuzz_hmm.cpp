// Fuzz target: the HMMER3 model reader (core/hmmsearch/hmm.hpp, read_hmm_file). Bad input must end
// in duet::InputError; anything else (a crash, a sanitizer report, another exception) is
// a finding. A model it accepts must have the shape the rest of duet relies on.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = duet::fuzz::write_input("model.hmm", duet::fuzz::as_text(data, size));
  std::vector<duet::HmmModel> models;
  try {
    models = duet::read_hmm_file(path);
  } catch (const duet::InputError&) {
    return 0;
  }
  for (const duet::HmmModel& m : models) {
    const auto nodes = static_cast<std::size_t>(m.M) + 1;
    const auto K = static_cast<std::size_t>(m.alphabet->K());
    bool ok = m.M >= 1 && m.t.size() == nodes && m.match.size() == nodes &&
              m.insert.size() == nodes && m.consensus.size() == nodes &&
              (m.composition.empty() || m.composition.size() == K);
    for (std::size_t k = 0; ok && k < nodes; ++k)
      ok = m.match[k].size() == K && m.insert[k].size() == K;
    if (!ok) duet::fuzz::finding("model '" + m.name + "' accepted with inconsistent sizes");
  }
  return 0;
}
