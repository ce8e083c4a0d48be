// BlockReader: see block_reader.hpp. The parsing rules and error messages are those of
// FastaReader (core/fasta_reader.cpp); tests compare the two.
#include "io/block_reader.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.hpp"
#include "core/fasta_grammar.hpp"
#include "core/input_file.hpp"
#include "core/text_reader.hpp"
#include "core/thread_cpu.hpp"
#include "io/packed_database.hpp"

namespace duet::io {

namespace {

constexpr std::size_t kMaxSequencesPerBlock = 1 << 16;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::uint8_t kSkip = simd::DigitizeTable::kSkip;
constexpr std::uint8_t kBad = simd::DigitizeTable::kBad;
// Room past the end of chunk texts and residue buffers for whole-vector reads and writes.
constexpr std::size_t kPad = 32;

bool full(const Block& b, std::size_t block_residues) {
  return b.residues.size() >= block_residues || b.sequences() >= kMaxSequencesPerBlock;
}

// Start of the last record of text[0, size) that does not start the text ("\n>" at
// position p - 1, p), or 0 when there is none.
std::size_t last_record_start(const char* text, std::size_t size) {
  std::size_t end = size;
  while (end > 1) {
    const void* hit = memrchr(text + 1, '>', end - 1);
    if (hit == nullptr) return 0;
    const std::size_t p = static_cast<std::size_t>(static_cast<const char*>(hit) - text);
    if (text[p - 1] == '\n') return p;
    end = p;
  }
  return 0;
}

// The signal that wakes the source thread from a blocked read when the reader stops:
// SIGURG, ignored by default, so that one arriving late does no harm.
constexpr int kWakeSignal = SIGURG;

// A handler that does nothing, installed without SA_RESTART: the blocked read returns
// EINTR instead of being restarted.
extern "C" void on_wake_signal(int) {}

void install_wake_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = on_wake_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    ::sigaction(kWakeSignal, &action, nullptr);
  });
}

std::int64_t count_newlines(const char* text, std::size_t size) {
  return static_cast<std::int64_t>(std::count(text, text + size, '\n'));
}

}  // namespace

BlockReader::BlockReader(const std::string& path, const Alphabet& alphabet,
                         const ReaderOptions& options)
    : BlockReader(InputFile(path), alphabet, options) {}

BlockReader::BlockReader(const InputFile& file, const Alphabet& alphabet,
                         const ReaderOptions& options)
    : path_(file.path()),
      alphabet_(alphabet),
      table_(alphabet),
      digitize_(simd::best_digitizer(options.simd)),
      block_residues_(std::max<std::size_t>(1, options.block_residues)),
      lines_before_(options.start.line - 1),
      next_block_(options.start.block),
      next_sequence_(options.start.sequence) {
  chunk_bytes_ = options.chunk_bytes ? options.chunk_bytes
                                     : std::clamp(4 * block_residues_, 8 * kMiB, 64 * kMiB);
  consumers_ = std::max(0, options.consumers);
  int threads = options.threads;
  if (threads <= 0)
    threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  max_chunks_ = static_cast<std::int64_t>(threads) + 2;
  start_offset_ = options.start.byte;
  stop_ = options.stop;
  const std::string& path = path_;

  // The file was opened once, by InputFile; this reader reads a duplicate of it.
  const int fd = file.duplicate();
  struct stat st {};
  unsigned char magic[2] = {0, 0};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const bool gzip = !regular || st.st_size < 2 ||
                    (::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b);
  if (regular) file_size_ = static_cast<std::uint64_t>(st.st_size);
  if (!gzip) {
    void* map =
        ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      ::madvise(map, static_cast<std::size_t>(st.st_size), MADV_SEQUENTIAL);
      map_ = static_cast<const char*>(map);
      map_size_ = static_cast<std::size_t>(st.st_size);
      ::close(fd);
      if (start_offset_ > map_size_) {
        ::munmap(map, map_size_);
        throw InputError(path, options.start.line,
                         "cannot seek to byte " + std::to_string(start_offset_));
      }
    }
  }
  if (map_ == nullptr) {  // gzip, or a file that cannot be mapped (zlib reads plain text too)
    gzFile f = gzdopen(fd, "rb");
    if (f == nullptr) {
      ::close(fd);
      throw InputError(path, 0, "cannot open: out of memory");
    }
    gzbuffer(f, 1 << 18);
    gz_ = f;
    gz_opened_as_ = "<fd:" + std::to_string(fd) + ">";
    if (start_offset_ > 0 && gzseek(f, static_cast<z_off_t>(start_offset_), SEEK_SET) !=
                                 static_cast<z_off_t>(start_offset_)) {
      gzclose(f);
      throw InputError(path, options.start.line,
                       "cannot seek to byte " + std::to_string(start_offset_));
    }
  }
  threads_.emplace_back([this] {
    ThreadCpuAccount account("reader (file)");
    read_chunks();
  });
  source_thread_ = threads_.back().native_handle();
  for (int t = 0; t < threads; ++t) {
    threads_.emplace_back([this] {
      ThreadCpuAccount account("reader (parsers)");
      parse_chunks();
    });
  }
}

BlockReader::~BlockReader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  source_wait_.notify_all();
  parser_wait_.notify_all();
  consumer_wait_.notify_all();
  if (gz_ != nullptr && !threads_.empty()) {
    // The source thread may be blocked reading a pipe whose writer has stalled: a signal
    // makes the read return (EINTR), and it then sees that the reader stops. Repeated,
    // because a signal sent just before the read begins is lost.
    install_wake_handler();
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (source_done_) break;
      }
      ::pthread_kill(source_thread_, kWakeSignal);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  for (std::thread& t : threads_) t.join();
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  if (map_ != nullptr) ::munmap(const_cast<char*>(map_), map_size_);
}

bool BlockReader::acquire_chunk_slot() {
  std::unique_lock lock(mutex_);
  source_wait_.wait(lock, [&] { return stopping_ || chunks_out_ < max_chunks_; });
  if (stopping_) return false;
  ++chunks_out_;
  return true;
}

void BlockReader::queue_chunk(RawChunk chunk) {
  {
    std::lock_guard lock(mutex_);
    if (chunk.size == 0 && !chunk.failure) {
      --chunks_out_;  // nothing in it: the file ended with the previous chunk
      return;
    }
    raw_.push_back(std::move(chunk));
    ++chunks_read_;
  }
  parser_wait_.notify_one();
}

// The source thread.
void BlockReader::read_chunks() {
  try {
    if (map_ != nullptr) {
      read_mapped_chunks();
    } else {
      read_gzip_chunks();
    }
  } catch (...) {
    RawChunk chunk;
    chunk.failure = std::make_unique<Failure>();
    chunk.failure->other = std::current_exception();
    {
      std::lock_guard lock(mutex_);
      chunk.index = chunks_read_;
      ++chunks_out_;
    }
    queue_chunk(std::move(chunk));
  }
  {
    std::lock_guard lock(mutex_);
    source_done_ = true;
  }
  parser_wait_.notify_all();
  consumer_wait_.notify_all();
}

// A mapped file: chunks are views of the mapping, cut just before a record's '>'.
void BlockReader::read_mapped_chunks() {
  // With consumers: small blocks in the first ramp_end and the last tail bytes.
  const std::size_t small = std::max<std::size_t>(1, block_residues_ / 4);
  const std::size_t ramp_end = start_offset_ + static_cast<std::size_t>(consumers_) * small;
  const std::size_t tail = static_cast<std::size_t>(consumers_) * block_residues_;
  const std::size_t tail_begin = map_size_ > tail ? map_size_ - tail : 0;
  // After the ramp, chunks grow from 2 x block_residues bytes to chunk_bytes, so that the
  // first of them are parsed by the time the ramp's blocks are done.
  std::size_t grown = consumers_ > 0 ? 2 * block_residues_ : chunk_bytes_;
  std::size_t begin = start_offset_;
  for (std::int64_t index = 0; begin < map_size_; ++index) {
    if (!acquire_chunk_slot()) return;
    const bool shaped = consumers_ > 0 && (begin < ramp_end || begin >= tail_begin);
    // A chunk ends at the tail's start, so that the tail's blocks are all small.
    std::size_t want = shaped ? block_residues_ : std::min(chunk_bytes_, grown);
    if (!shaped) grown = std::min(chunk_bytes_, 2 * grown);
    if (consumers_ > 0 && begin < tail_begin) want = std::min(want, tail_begin - begin);
    want = std::max<std::size_t>(want, 1);
    std::size_t end = map_size_;
    if (map_size_ - begin > want) {
      end = begin + last_record_start(map_ + begin, want);
      if (end == begin) {  // one record longer than a chunk: the chunk ends after it
        end = map_size_;
        for (const char* p = map_ + begin + want; p < map_ + map_size_;) {
          const void* hit = std::memchr(p, '>', static_cast<std::size_t>(map_ + map_size_ - p));
          if (hit == nullptr) break;
          const char* h = static_cast<const char*>(hit);
          if (h[-1] == '\n') {
            end = static_cast<std::size_t>(h - map_);
            break;
          }
          p = h + 1;
        }
      }
    }
    RawChunk chunk;
    chunk.index = index;
    chunk.offset = begin;
    chunk.first = begin == 0;
    chunk.text = map_ + begin;
    chunk.size = end - begin;
    chunk.readable_end = map_ + map_size_;
    chunk.block_residues = shaped ? small : block_residues_;
    chunk.closes_blocks = shaped;
    queue_chunk(std::move(chunk));
    bytes_read_.store(end, std::memory_order_relaxed);
    begin = end;
  }
}

// A gzip file (or a stream zlib copies as it is): chunks inflated into buffers.
void BlockReader::read_gzip_chunks() {
  gzFile f = static_cast<gzFile>(gz_);
  std::unique_ptr<char[]> carry;  // the start of the next chunk's first record
  std::size_t carry_size = 0;
  std::uint64_t offset = start_offset_;
  bool eof = false;
  for (std::int64_t index = 0; !eof; ++index) {
    if (!acquire_chunk_slot()) return;
    RawChunk chunk;
    chunk.index = index;
    chunk.offset = offset;
    chunk.first = offset == 0;
    chunk.block_residues = block_residues_;
    std::size_t capacity = std::max(chunk_bytes_, 2 * carry_size);
    chunk.storage = std::make_unique_for_overwrite<char[]>(capacity + kPad);
    if (carry_size > 0) std::memcpy(chunk.storage.get(), carry.get(), carry_size);
    std::size_t have = carry_size;
    std::size_t cut = 0;
    for (;;) {
      while (have < capacity) {
        const auto want = static_cast<unsigned>(std::min<std::size_t>(capacity - have, 1u << 30));
        const int n = gzread(f, chunk.storage.get() + have, want);
        int code = Z_OK;
        if (n <= 0) gzerror(f, &code);
        if (n < 0 || (n == 0 && code != Z_OK && code != Z_STREAM_END)) {
          // TextReader's line and message: the line after the last complete line read.
          chunk.failure = std::make_unique<Failure>();
          chunk.failure->local_line = count_newlines(chunk.storage.get(), have) + 1;
          chunk.failure->message = "read error: " + zlib_error_text(f, gz_opened_as_);
          eof = true;
          break;
        }
        if (n == 0) {
          eof = true;
          break;
        }
        have += static_cast<std::size_t>(n);
        const z_off_t consumed = gzoffset(f);
        bytes_read_.store(consumed < 0 ? 0 : static_cast<std::uint64_t>(consumed),
                          std::memory_order_relaxed);
      }
      if (eof) {
        // After a read error, the complete lines read before it are still parsed (their
        // errors come first, as FastaReader meets them first).
        if (chunk.failure) {
          const char* text = chunk.storage.get();
          const auto* last = static_cast<const char*>(memrchr(text, '\n', have));
          cut = last ? static_cast<std::size_t>(last - text) + 1 : 0;
        } else {
          cut = have;
        }
        break;
      }
      cut = last_record_start(chunk.storage.get(), have);
      if (cut > 0) break;
      // One record longer than the chunk: read on.
      capacity *= 2;
      auto bigger = std::make_unique_for_overwrite<char[]>(capacity + kPad);
      std::memcpy(bigger.get(), chunk.storage.get(), have);
      chunk.storage = std::move(bigger);
    }
    carry_size = eof ? 0 : have - cut;
    if (carry_size > 0) {
      carry = std::make_unique_for_overwrite<char[]>(carry_size);
      std::memcpy(carry.get(), chunk.storage.get() + cut, carry_size);
    }
    chunk.text = chunk.storage.get();
    chunk.size = cut;
    chunk.readable_end = chunk.text + cut + kPad;
    offset += cut;
    queue_chunk(std::move(chunk));
  }
}

void BlockReader::parse_chunks() {
  for (;;) {
    RawChunk raw;
    {
      std::unique_lock lock(mutex_);
      parser_wait_.wait(lock, [&] { return stopping_ || !raw_.empty() || source_done_; });
      if (stopping_ || raw_.empty()) return;
      raw = std::move(raw_.front());
      raw_.pop_front();
    }
    ParsedChunk parsed;
    try {
      parsed = parse(raw);
    } catch (...) {
      parsed.failure = std::make_unique<Failure>();
      parsed.failure->other = std::current_exception();
    }
    raw.storage.reset();
    {
      std::lock_guard lock(mutex_);
      parsed_.emplace(raw.index, std::move(parsed));
    }
    consumer_wait_.notify_all();
  }
}

// Parses one chunk: whole records (the first chunk may start with blank lines). Block
// first_line values are chunk-relative; next() makes them absolute.
BlockReader::ParsedChunk BlockReader::parse(const RawChunk& raw) const {
  ParsedChunk out;
  out.block_residues = raw.block_residues;
  out.closes_blocks = raw.closes_blocks;
  const std::size_t block_residues = raw.block_residues;
  const char* const begin = raw.text;
  const char* const end = begin + raw.size;
  const char* p = begin;
  std::int64_t line = 1;  // chunk-relative line of p (always at a line start)
  auto fail = [&](const std::string& message) {
    out.failure = std::make_unique<Failure>();
    out.failure->local_line = line;
    out.failure->message = message;
    return std::move(out);
  };
  // Moves p past the line ending at `line_end` (its '\n', or the end of the chunk).
  auto next_line = [&](const char* line_end) {
    if (line_end < end) {
      p = line_end + 1;
      ++line;
    } else {
      p = end;
    }
  };
  auto find_line_end = [&](const char* from) {
    const void* nl = std::memchr(from, '\n', static_cast<std::size_t>(end - from));
    return nl ? static_cast<const char*>(nl) : end;
  };

  if (raw.first) {
    // A packed database reaches the FASTA parser only when it could not be mapped; its
    // first line is told as FastaReader tells it (a '\r' before the '\n' dropped).
    std::string_view first(begin, static_cast<std::size_t>(find_line_end(begin) - begin));
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    if (first == fasta::kPackedDatabaseFirstLine) return fail(fasta::kPackedDatabaseNotMapped);
  }
  if (raw.first) {  // blank lines may precede the first header
    while (p < end && *p != '>') {
      const char* e = find_line_end(p);
      if (!fasta::is_blank(std::string_view(p, static_cast<std::size_t>(e - p))))
        return fail(fasta::not_a_header(true));
      next_line(e);
    }
  }

  BlockPtr block;
  std::size_t used = 0;  // residues written into block->residues (its size is capacity)
  auto close_block = [&] {
    if (!block) return;
    block->residues.resize(used);
    out.blocks.push_back(std::move(block));
  };
  while (p < end) {
    // Header: '>' name description
    const char* e = find_line_end(p);
    fasta::Header header;
    if (const char* error =
            fasta::split_header(std::string_view(p, static_cast<std::size_t>(e - p)), header))
      return fail(error);
    if (!block || used >= block_residues || block->sequences() >= kMaxSequencesPerBlock) {
      close_block();
      block = std::make_shared<Block>();
      block->file_offset = raw.offset + static_cast<std::uint64_t>(p - begin);
      block->first_line = line;
      block->residues.resize(std::min<std::size_t>(block_residues + block_residues / 16,
                                                   static_cast<std::size_t>(end - p)) +
                             kPad);
      used = 0;
    }
    block->add_header(header.name, header.description);
    next_line(e);

    // Sequence lines, up to the next header.
    while (p < end && *p != '>') {
      e = find_line_end(p);
      const auto n = static_cast<std::size_t>(e - p);
      if (used + n + kPad > block->residues.size()) {
        block->residues.resize(std::max(used + n + kPad, 2 * block->residues.size()));
      }
      Residue* to = block->residues.data() + used;
      const simd::DigitizeLine digitize =
          p + n + kPad <= raw.readable_end ? digitize_ : simd::digitize_line_scalar;
      if (digitize(table_, p, n, to)) {
        used += n;
      } else {  // white space to drop, or an illegal byte
        std::size_t kept = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint8_t x = table_.codes[static_cast<unsigned char>(p[i])];
          if (x < kSkip) {
            to[kept++] = x;
          } else if (x == kBad) {
            return fail(fasta::illegal_character(p[i], alphabet_, block->name(block->sequences())));
          }
        }
        used += kept;
      }
      next_line(e);
    }
    block->offsets.push_back(static_cast<std::int64_t>(used));
  }
  close_block();
  out.newlines = line - 1;
  if (raw.failure) out.failure = std::make_unique<Failure>(*raw.failure);  // after its text
  return out;
}

double BlockReader::fraction_handed_out() const {
  if (map_ != nullptr)
    return map_size_ > 0 ? static_cast<double>(handed_offset_) / static_cast<double>(map_size_)
                         : 1.0;
  return file_size_ > 0
             ? std::min(1.0, static_cast<double>(bytes_read()) / static_cast<double>(file_size_))
             : 0.0;
}

BlockPtr BlockReader::emit(BlockPtr block) {
  handed_offset_ = block->file_offset;
  block->index = next_block_++;
  block->first_sequence = next_sequence_;
  next_sequence_ += static_cast<std::int64_t>(block->sequences());
  return block;
}

BlockPtr BlockReader::next() {
  for (;;) {
    if (!ready_.empty()) {
      BlockPtr b = std::move(ready_.front());
      ready_.pop_front();
      return emit(std::move(b));
    }
    if (failed_) return nullptr;
    ParsedChunk chunk;
    bool end = false;
    {
      std::unique_lock lock(mutex_);
      const auto ready = [&] {
        return parsed_.count(next_chunk_) > 0 || (source_done_ && next_chunk_ >= chunks_read_);
      };
      // A pipe whose writer stalls may keep the next chunk from coming: a stop request is
      // looked at while waiting, and ends the blocks handed out.
      while (!consumer_wait_.wait_for(lock, std::chrono::milliseconds(50), ready)) {
        if (stop_ != nullptr && stop_->load()) return nullptr;
      }
      const auto it = parsed_.find(next_chunk_);
      if (it == parsed_.end()) {
        end = true;
      } else {
        chunk = std::move(it->second);
        parsed_.erase(it);
        --chunks_out_;
        ++next_chunk_;
      }
    }
    source_wait_.notify_one();
    if (end) {
      if (pending_) return emit(std::exchange(pending_, nullptr));
      return nullptr;
    }
    if (chunk.failure) {
      failed_ = true;
      pending_.reset();
      if (chunk.failure->other) std::rethrow_exception(chunk.failure->other);
      throw InputError(path_, lines_before_ + chunk.failure->local_line, chunk.failure->message);
    }
    for (BlockPtr& b : chunk.blocks) b->first_line += lines_before_;
    lines_before_ += chunk.newlines;
    if (chunk.blocks.empty()) continue;
    if (pending_) {
      Block& first = *chunk.blocks.front();
      if (pending_->sequences() + first.sequences() <= kMaxSequencesPerBlock) {
        pending_->append(std::move(first));
        chunk.blocks.front() = std::move(pending_);
      } else {
        ready_.push_back(std::move(pending_));
      }
      pending_.reset();
    }
    if (!chunk.closes_blocks && !full(*chunk.blocks.back(), chunk.block_residues)) {
      pending_ = std::move(chunk.blocks.back());
      chunk.blocks.pop_back();
    }
    for (BlockPtr& b : chunk.blocks) ready_.push_back(std::move(b));
  }
}

}  // namespace duet::io
