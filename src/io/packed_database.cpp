// The packed database: see packed_database.hpp for the format.
#include "io/packed_database.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "core/thread_cpu.hpp"

namespace duet::io {

static_assert(std::endian::native == std::endian::little,
              "the packed database is read and written in the machine's byte order, "
              "which must be little-endian");

namespace {

constexpr std::size_t kHeaderBytes = 256;
constexpr std::size_t kSectionTable = 56;  // where the section table starts
constexpr std::size_t kHeaderCrcAt = 252;
constexpr std::int64_t kMaxSequencesPerBlock = 1 << 16;
constexpr std::size_t kWriteBuffer = std::size_t{1} << 20;
constexpr const char* kSectionNames[4] = {"residues", "sequence offsets", "header text",
                                          "header offsets"};

std::uint32_t alphabet_code(const Alphabet& alphabet) {
  return alphabet.type() == AlphabetType::amino ? 1 : 2;
}

std::uint64_t aligned(std::uint64_t offset) {
  return (offset + kPackedAlignment - 1) / kPackedAlignment * kPackedAlignment;
}

template <typename T>
void put(unsigned char* header, std::size_t at, T value) {
  std::memcpy(header + at, &value, sizeof value);
}

template <typename T>
T get(const unsigned char* header, std::size_t at) {
  T value;
  std::memcpy(&value, header + at, sizeof value);
  return value;
}

std::uint32_t crc_of(std::uint32_t crc, const void* data, std::size_t size) {
  return static_cast<std::uint32_t>(
      crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(size)));
}

// Writes all of data[0, size) at `offset`; false on failure (errno set).
bool write_at(int fd, const void* data, std::size_t size, std::uint64_t offset) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

InputError write_error(const std::string& shown_path, int error) {
  return InputError(shown_path, 0,
                    std::string("cannot write: ") + std::strerror(error) +
                        (error == ENOSPC || error == EDQUOT ? " (is the disk full?)" : ""));
}

}  // namespace

bool starts_with_packed_magic(const void* bytes, std::size_t size) {
  return size >= sizeof kPackedMagic && std::memcmp(bytes, kPackedMagic, sizeof kPackedMagic) == 0;
}

// ---- writing ----

// One section being written: bytes buffered, then written at the section's place in its
// file (the database itself, or a temporary file), its checksum kept up to date.
class PackedDatabaseWriter::Section {
 public:
  Section(int fd, bool owns_fd, std::uint64_t start, const std::string& shown_path)
      : fd_(fd), owns_fd_(owns_fd), position_(start), shown_path_(shown_path) {
    buffer_.reserve(kWriteBuffer);
  }
  ~Section() {
    if (owns_fd_) ::close(fd_);
  }
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

  void write(const void* data, std::size_t size) {
    crc_ = crc_of(crc_, data, size);
    bytes_ += size;
    if (buffer_.size() + size > kWriteBuffer) flush();
    if (size >= kWriteBuffer) {  // a large piece (a block's residues) goes out as it is
      write_out(data, size);
      return;
    }
    const auto* p = static_cast<const char*>(data);
    buffer_.insert(buffer_.end(), p, p + size);
  }
  void flush() {
    if (buffer_.empty()) return;
    write_out(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  // Copies the section (written to a temporary file from offset 0) into `to` at `offset`.
  void copy_to(int to, std::uint64_t offset) {
    flush();
    std::vector<char> chunk(kWriteBuffer);
    for (std::uint64_t done = 0; done < bytes_;) {
      const auto want =
          static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), bytes_ - done));
      const ssize_t n = ::pread(fd_, chunk.data(), want, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw InputError(shown_path_, 0,
                         std::string("cannot read back a temporary section: ") +
                             std::strerror(n == 0 ? EIO : errno));
      if (!write_at(to, chunk.data(), static_cast<std::size_t>(n), offset + done))
        throw write_error(shown_path_, errno);
      done += static_cast<std::uint64_t>(n);
    }
  }
  std::uint64_t bytes() const { return bytes_; }
  std::uint32_t crc() const { return crc_; }

 private:
  void write_out(const void* data, std::size_t size) {
    if (!write_at(fd_, data, size, position_)) throw write_error(shown_path_, errno);
    position_ += size;
  }
  int fd_;
  bool owns_fd_;
  std::uint64_t position_;
  const std::string& shown_path_;
  std::vector<char> buffer_;
  std::uint64_t bytes_ = 0;
  std::uint32_t crc_ = 0;
};

PackedDatabaseWriter::PackedDatabaseWriter(const std::string& path, std::string shown_path,
                                           const Alphabet& alphabet)
    : shown_path_(std::move(shown_path)), alphabet_(alphabet) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(shown_path_, 0, std::string("cannot create: ") + std::strerror(errno));
  residue_section_ = std::make_unique<Section>(fd_, false, kPackedAlignment, shown_path_);
  // The other sections are not known in size until the end: each goes to a temporary file
  // beside the output (the same file system, so the space is the space the output needs),
  // unlinked at once, so that no name is ever left behind.
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (folder.empty()) folder = ".";
  auto temporary = [&]() {
    std::string name = folder + "/.duet-makedb-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0)
      throw InputError(shown_path_, 0,
                       "cannot create a temporary file in " + folder + ": " + std::strerror(errno));
    ::unlink(name.c_str());
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    return std::make_unique<Section>(fd, true, 0, shown_path_);
  };
  offsets_ = temporary();
  header_text_ = temporary();
  header_offsets_ = temporary();
  const std::int64_t zero = 0;
  offsets_->write(&zero, sizeof zero);
  header_offsets_->write(&zero, sizeof zero);
}

PackedDatabaseWriter::~PackedDatabaseWriter() {
  residue_section_.reset();
  if (fd_ >= 0) ::close(fd_);
}

void PackedDatabaseWriter::add(const Block& block) {
  residue_section_->write(block.residues.data(), block.residues.size());
  std::vector<std::int64_t> shifted(block.sequences());
  for (std::size_t i = 0; i < block.sequences(); ++i) {
    shifted[i] = residues_ + block.offsets[i + 1];
    longest_ = std::max<std::int64_t>(longest_, block.length(i));
  }
  offsets_->write(shifted.data(), shifted.size() * sizeof(std::int64_t));
  header_text_->write(block.header_text.data(), block.header_text.size());
  shifted.resize(2 * block.sequences());
  for (std::size_t k = 0; k < shifted.size(); ++k)
    shifted[k] = header_bytes_ + block.header_offsets[k + 1];
  header_offsets_->write(shifted.data(), shifted.size() * sizeof(std::int64_t));
  residues_ += block.residue_count();
  header_bytes_ += static_cast<std::int64_t>(block.header_text.size());
  sequences_ += static_cast<std::int64_t>(block.sequences());
}

void PackedDatabaseWriter::finish() {
  residue_section_->flush();
  Section* sections[4] = {residue_section_.get(), offsets_.get(), header_text_.get(),
                          header_offsets_.get()};
  std::uint64_t offsets[4];
  offsets[0] = kPackedAlignment;
  for (int k = 1; k < 4; ++k) {
    offsets[k] = aligned(offsets[k - 1] + sections[k - 1]->bytes());
    sections[k]->copy_to(fd_, offsets[k]);
  }
  const std::uint64_t end = offsets[3] + sections[3]->bytes();
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0) throw write_error(shown_path_, errno);

  unsigned char header[kHeaderBytes] = {};
  std::memcpy(header, kPackedMagic, sizeof kPackedMagic);
  put<std::uint32_t>(header, 8, kPackedVersion);
  put<std::uint32_t>(header, 12, kHeaderBytes);
  put<std::uint32_t>(header, 16, alphabet_code(alphabet_));
  put<std::uint32_t>(header, 20, static_cast<std::uint32_t>(alphabet_.Kp()));
  put<std::uint64_t>(header, 24, static_cast<std::uint64_t>(sequences_));
  put<std::uint64_t>(header, 32, static_cast<std::uint64_t>(residues_));
  put<std::uint64_t>(header, 40, static_cast<std::uint64_t>(longest_));
  put<std::uint64_t>(header, 48, kPackedAlignment);
  for (int k = 0; k < 4; ++k) {
    put<std::uint64_t>(header, kSectionTable + 24 * k, offsets[k]);
    put<std::uint64_t>(header, kSectionTable + 24 * k + 8, sections[k]->bytes());
    put<std::uint32_t>(header, kSectionTable + 24 * k + 16, sections[k]->crc());
  }
  put<std::uint32_t>(header, kHeaderCrcAt, crc_of(0, header, kHeaderCrcAt));
  if (!write_at(fd_, header, sizeof header, 0)) throw write_error(shown_path_, errno);
  if (::close(std::exchange(fd_, -1)) != 0) throw write_error(shown_path_, errno);
}

// ---- reading ----

bool PackedDatabase::is_packed(const InputFile& file) {
  if (!file.rereadable()) return false;
  const int fd = file.duplicate();
  unsigned char magic[sizeof kPackedMagic];
  const ssize_t n = ::pread(fd, magic, sizeof magic, 0);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof magic) && starts_with_packed_magic(magic, sizeof magic);
}

PackedDatabase::PackedDatabase(const InputFile& file) : path_(file.path()) {
  const auto fail = [&](const std::string& message) { return InputError(path_, 0, message); };
  if (!file.rereadable())
    throw fail("a packed database must be a regular file (it is mapped), not a pipe or FIFO");
  const int fd = file.duplicate();
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw fail(std::string("cannot read: ") + std::strerror(error));
  }
  map_size_ = static_cast<std::size_t>(st.st_size);
  void* map = map_size_ > 0 ? ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int map_error = errno;
  ::close(fd);
  if (map == MAP_FAILED) throw fail(std::string("cannot map: ") + std::strerror(map_error));
  map_ = static_cast<const unsigned char*>(map);
  try {
    const std::string size_text = std::to_string(map_size_) + " bytes";
    if (!starts_with_packed_magic(map_, map_size_)) throw fail("not a packed database (no magic)");
    if (map_size_ < 16) throw fail("is truncated: " + size_text + ", less than a header");
    const auto version = get<std::uint32_t>(map_, 8);
    if (version != kPackedVersion)
      throw fail("is a packed database of format version " + std::to_string(version) +
                 "; this duet reads version " + std::to_string(kPackedVersion) +
                 " only: make it again with this duet's `duet makedb`");
    if (map_size_ < kHeaderBytes)
      throw fail("is truncated: " + size_text + ", less than its " + std::to_string(kHeaderBytes) +
                 "-byte header");
    if (get<std::uint32_t>(map_, kHeaderCrcAt) != crc_of(0, map_, kHeaderCrcAt) ||
        get<std::uint32_t>(map_, 12) != kHeaderBytes)
      throw fail("is corrupt: its header's checksum does not match the header");
    const auto alphabet = get<std::uint32_t>(map_, 16);
    if (alphabet != 1 && alphabet != 2)
      throw fail("is corrupt: unknown alphabet code " + std::to_string(alphabet));
    alphabet_ = alphabet == 1 ? &Alphabet::amino() : &Alphabet::dna();
    if (get<std::uint32_t>(map_, 20) != static_cast<std::uint32_t>(alphabet_->Kp()))
      throw fail("is corrupt: the alphabet's number of codes is not " +
                 std::to_string(alphabet_->Kp()));
    const auto sequences = get<std::uint64_t>(map_, 24);
    const auto residues = get<std::uint64_t>(map_, 32);
    // Sizes far beyond any file are refused before they are multiplied.
    if (sequences > map_size_ || residues > map_size_)
      throw fail("is truncated or corrupt: " + size_text + " cannot hold the " +
                 std::to_string(sequences) + " sequences and " + std::to_string(residues) +
                 " residues its header counts");
    sequences_ = static_cast<std::int64_t>(sequences);
    residues_ = static_cast<std::int64_t>(residues);
    longest_ = static_cast<std::int64_t>(get<std::uint64_t>(map_, 40));
    const std::uint64_t expected_bytes[4] = {residues, 8 * (sequences + 1), 0,
                                             8 * (2 * sequences + 1)};
    std::uint64_t end = kHeaderBytes;
    for (int k = 0; k < 4; ++k) {
      section_offset_[k] = get<std::uint64_t>(map_, kSectionTable + 24 * k);
      section_bytes_[k] = get<std::uint64_t>(map_, kSectionTable + 24 * k + 8);
      section_crc_[k] = get<std::uint32_t>(map_, kSectionTable + 24 * k + 16);
      if (section_offset_[k] % kPackedAlignment != 0 || section_offset_[k] < end ||
          (k != 2 && section_bytes_[k] != expected_bytes[k]) || section_bytes_[k] > map_size_)
        throw fail(std::string("is corrupt: its ") + kSectionNames[k] +
                   " section's place or size is impossible");
      end = section_offset_[k] + section_bytes_[k];
    }
    if (end > map_size_)
      throw fail("is truncated: " + size_text + ", and its header says " + std::to_string(end));
    if (end < map_size_)
      throw fail("is corrupt: " + size_text + ", and its header says " + std::to_string(end));
    sequence_offsets_ = reinterpret_cast<const std::int64_t*>(section(1));
    header_text_ = reinterpret_cast<const char*>(section(2));
    header_offsets_ = reinterpret_cast<const std::int64_t*>(section(3));
    if (sequence_offsets_[0] != 0 || sequence_offsets_[sequences_] != residues_ ||
        header_offsets_[0] != 0 ||
        header_offsets_[2 * sequences_] != static_cast<std::int64_t>(section_bytes_[2]))
      throw fail("is corrupt: its offsets do not span its sections");
  } catch (...) {
    ::munmap(const_cast<unsigned char*>(map_), map_size_);
    throw;
  }
}

PackedDatabase::~PackedDatabase() {
  stop_verifying_.store(true);
  if (verifier_.joinable()) verifier_.join();
  ::munmap(const_cast<unsigned char*>(map_), map_size_);
}

std::string PackedDatabase::checksum_problem(const std::atomic<bool>* stop) const {
  constexpr std::size_t kStep = std::size_t{16} << 20;
  // The small sections first: they are the quicker to read.
  for (const int k : {1, 3, 2, 0}) {
    std::uint32_t crc = 0;
    for (std::uint64_t done = 0; done < section_bytes_[k]; done += kStep) {
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) return {};
      const auto n =
          static_cast<std::size_t>(std::min<std::uint64_t>(kStep, section_bytes_[k] - done));
      crc = crc_of(crc, section(k) + done, n);
    }
    if (crc != section_crc_[k])
      return std::string("is corrupt: the checksum of its ") + kSectionNames[k] +
             " section does not match its header's (the file changed after `duet makedb` "
             "wrote it)";
  }
  return {};
}

void PackedDatabase::verify_checksums(const std::atomic<bool>* stop) const {
  const std::string problem = checksum_problem(stop);
  if (!problem.empty()) throw InputError(path_, 0, problem);
}

void PackedDatabase::start_verification() {
  if (verifier_.joinable() || verified_.load()) return;
  verifier_ = std::thread([this] {
    ThreadCpuAccount account("reader (checksums)");
    std::string problem = checksum_problem(&stop_verifying_);
    {
      std::lock_guard lock(failure_mutex_);
      failure_ = std::move(problem);
    }
    verified_.store(true);
  });
}

void PackedDatabase::check_verification(bool wait) {
  if (wait && verifier_.joinable()) verifier_.join();
  std::lock_guard lock(failure_mutex_);
  if (!failure_.empty()) throw InputError(path_, 0, failure_);
}

std::int64_t PackedDatabase::block_end(std::int64_t first, std::size_t target) const {
  const std::int64_t limit = std::min(sequences_, first + kMaxSequencesPerBlock);
  const std::int64_t start = sequence_offsets_[first];
  // An impossible offset (a corrupt file) makes a block of one, which make_block refuses.
  if (start < 0 || start > residues_) return std::min(limit, first + 1);
  const std::int64_t want = start + static_cast<std::int64_t>(target);
  const std::int64_t* hit =
      std::lower_bound(sequence_offsets_ + first + 1, sequence_offsets_ + limit + 1, want);
  return std::min(limit, static_cast<std::int64_t>(hit - sequence_offsets_));
}

BlockPtr PackedDatabase::make_block(std::int64_t index, std::int64_t first,
                                    std::int64_t count) const {
  const auto corrupt = [&](const std::string& what) {
    return InputError(path_, 0,
                      "is corrupt: " + what + " (sequence " + std::to_string(first + 1) + " on)");
  };
  auto block = std::make_shared<Block>();
  block->index = index;
  block->first_sequence = first;
  const std::int64_t* o = sequence_offsets_ + first;
  for (std::int64_t i = 0; i < count; ++i) {
    if (o[i + 1] < o[i] || o[i + 1] > residues_) throw corrupt("sequence offsets out of order");
  }
  const Residue* residues = reinterpret_cast<const Residue*>(section(0));
  block->residues.assign(residues + o[0], residues + o[count]);
  Residue highest = 0;
  for (const Residue r : block->residues) highest = std::max(highest, r);
  if (!block->residues.empty() && highest >= alphabet_->Kp())
    throw corrupt("a residue code outside the " + std::string(alphabet_->name()) + " alphabet");
  block->offsets.resize(static_cast<std::size_t>(count) + 1);
  for (std::int64_t i = 0; i <= count; ++i)
    block->offsets[static_cast<std::size_t>(i)] = o[i] - o[0];

  const std::int64_t* h = header_offsets_ + 2 * first;
  const auto text_bytes = static_cast<std::int64_t>(section_bytes_[2]);
  for (std::int64_t k = 0; k < 2 * count; ++k) {
    if (h[k + 1] < h[k] || h[k + 1] > text_bytes) throw corrupt("header offsets out of order");
  }
  block->header_text.assign(header_text_ + h[0], header_text_ + h[2 * count]);
  block->header_offsets.resize(static_cast<std::size_t>(2 * count) + 1);
  for (std::int64_t k = 0; k <= 2 * count; ++k)
    block->header_offsets[static_cast<std::size_t>(k)] = h[k] - h[0];
  return block;
}

// ---- blocks for a pass ----

PackedBlockReader::PackedBlockReader(PackedDatabase& database, const ReaderOptions& options)
    : database_(database),
      block_residues_(std::max<std::size_t>(1, options.block_residues)),
      consumers_(static_cast<std::size_t>(std::max(0, options.consumers))),
      next_block_(options.start.block),
      next_sequence_(std::clamp<std::int64_t>(options.start.sequence, 0, database.sequences())),
      stop_(options.stop) {
  residues_before_ = database_.sequence_offset(next_sequence_);
}

BlockPtr PackedBlockReader::next() {
  return next_block(false);
}

BlockPtr PackedBlockReader::next_to_skip() {
  return next_block(true);
}

BlockPtr PackedBlockReader::next_block(bool extent_only) {
  if (stop_ != nullptr && stop_->load()) return nullptr;
  database_.check_verification(false);
  if (next_sequence_ >= database_.sequences()) {
    // The pass ends only once the checksums are known to be right.
    database_.check_verification(true);
    return nullptr;
  }
  std::size_t target = block_residues_;
  if (consumers_ > 0) {
    const auto tail = static_cast<std::int64_t>(std::min<std::size_t>(
        consumers_ * block_residues_, static_cast<std::size_t>(database_.residues())));
    const bool ramp = next_block_ < static_cast<std::int64_t>(consumers_);
    if (ramp || database_.sequence_offset(next_sequence_) >= database_.residues() - tail)
      target = std::max<std::size_t>(1, block_residues_ / 4);
  }
  const std::int64_t end = database_.block_end(next_sequence_, target);
  BlockPtr block;
  if (extent_only) {
    block = std::make_shared<Block>();
    block->index = next_block_;
    block->first_sequence = next_sequence_;
    block->offsets.assign(static_cast<std::size_t>(end - next_sequence_) + 1, 0);
    block->work_units = database_.sequence_offset(end) - database_.sequence_offset(next_sequence_);
  } else {
    block = database_.make_block(next_block_, next_sequence_, end - next_sequence_);
  }
  ++next_block_;
  next_sequence_ = end;
  residues_handed_ += block->work();
  return block;
}

double PackedBlockReader::fraction_done() const {
  if (database_.residues() == 0) return next_sequence_ >= database_.sequences() ? 1.0 : 0.0;
  return static_cast<double>(residues_before_ + residues_handed_) /
         static_cast<double>(database_.residues());
}

}  // namespace duet::io
