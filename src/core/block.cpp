// Block: see block.hpp.
#include "core/block.hpp"

namespace duet {

void Block::add_header(std::string_view name, std::string_view description) {
  header_text.append(name);
  header_offsets.push_back(static_cast<std::int64_t>(header_text.size()));
  header_text.append(description);
  header_offsets.push_back(static_cast<std::int64_t>(header_text.size()));
}

void Block::append(Block&& other) {
  const auto residue_base = static_cast<std::int64_t>(residues.size());
  residues.insert(residues.end(), other.residues.begin(), other.residues.end());
  for (std::size_t i = 1; i < other.offsets.size(); ++i)
    offsets.push_back(residue_base + other.offsets[i]);
  const auto header_base = static_cast<std::int64_t>(header_text.size());
  header_text += other.header_text;
  for (std::size_t i = 1; i < other.header_offsets.size(); ++i) {
    header_offsets.push_back(header_base + other.header_offsets[i]);
  }
  other = Block{};
}

std::size_t Block::memory_bytes() const {
  return sizeof(Block) + residues.capacity() + header_text.capacity() +
         (offsets.capacity() + header_offsets.capacity()) * sizeof(std::int64_t);
}

}  // namespace duet
