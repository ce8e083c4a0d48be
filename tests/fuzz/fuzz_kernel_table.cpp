// Fuzz target: the GPU kernel-choice table reader (io/kernel_table.hpp,
// parse_kernel_table). Bad input must end in duet::InputError; a table it accepts must
// come back equal from to_toml and answer choose_kernels for any model length.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "fuzz_support.hpp"
#include "io/kernel_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  duet::io::KernelTable table;
  try {
    table = duet::io::parse_kernel_table(duet::fuzz::as_text(data, size), "fuzz.toml");
  } catch (const duet::InputError&) {
    return 0;
  }
  const std::string written = duet::io::to_toml(table);
  try {
    if (!(duet::io::parse_kernel_table(written, "written.toml") == table))
      duet::fuzz::finding("to_toml does not read back equal:\n" + written);
  } catch (const duet::InputError& e) {
    duet::fuzz::finding(std::string("to_toml does not read back: ") + e.what() + "\n" + written);
  }
  for (const int M : {1, table.rows.front().max_length, table.rows.back().max_length + 1, 100000}) {
    const duet::io::KernelTableRow& row = duet::io::choose_kernels(table, M);
    if (row.max_length < M && &row != &table.rows.back())
      duet::fuzz::finding("choose_kernels gives a row too short for M = " + std::to_string(M));
  }
  return 0;
}
