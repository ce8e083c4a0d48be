// Fuzz target: the TOML configuration reader (io/config.hpp, parse_config). Bad input
// must end in duet::InputError; a configuration it accepts must come back equal from
// to_toml, as config.hpp promises.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "fuzz_support.hpp"
#include "io/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  duet::io::Config config;
  try {
    config = duet::io::parse_config(duet::fuzz::as_text(data, size), "fuzz.toml");
  } catch (const duet::InputError&) {
    return 0;
  }
  const std::string written = duet::io::to_toml(config);
  try {
    if (!(duet::io::parse_config(written, "written.toml") == config))
      duet::fuzz::finding("to_toml does not read back equal:\n" + written);
  } catch (const duet::InputError& e) {
    duet::fuzz::finding(std::string("to_toml does not read back: ") + e.what() + "\n" + written);
  }
  return 0;
}
