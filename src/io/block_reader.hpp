// BlockReader: streams a FASTA file (plain or gzip) into Blocks, parsing and digitizing
// in parallel while handing the blocks out in database order.
//
// Pipeline (threads owned by the reader):
//   source thread   cuts the file into large chunks that end just before a record's '>'
//                   ("\n>"). A plain file is mapped into memory and the chunks are views
//                   of it (nothing copied); a gzip file is inflated by this one thread
//                   into chunk buffers, the part after the last record boundary carried
//                   over to the next chunk;
//   parser threads  parse and digitize whole chunks at once into blocks (a 256-entry
//                   lookup table per alphabet, AVX2 where the CPU has it, memchr to find
//                   line ends);
//   next()          hands the blocks out in chunk order, numbers them (block index, first
//                   sequence), joins a chunk's short last block with the next chunk's first
//                   block, and turns a chunk-relative error line into the file's line.
// Memory is bounded: at most `threads + 2` chunks exist at once (read, being parsed, or
// parsed and waiting for next()); a mapped file is clean page cache that the kernel
// reclaims as needed.
//
// Blocks: a block closes once it holds at least `block_residues` residues or 65,536
// sequences; the last block of the file may be smaller; one sequence longer than
// block_residues makes a block by itself. With ReaderOptions::consumers, the first and
// last blocks of a plain file are smaller (cut from chunks of block_residues bytes, a
// quarter of block_residues each, never joined with the next chunk's). Where a chunk boundary falls
// in a block, the two parts are joined (one copy), so a block holds less than about 2 x
// block_residues plus one sequence. Results never depend on where blocks end.
//
// Parsing follows the grammar of core/fasta_grammar.hpp, FastaReader's: the same input
// accepted, the same error messages with the file and line.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/alphabet.hpp"
#include "core/block.hpp"
#include "core/defaults.hpp"
#include "core/input_file.hpp"
#include "host_simd/digitize.hpp"

namespace duet::io {

// Where reading starts: the start of the file, or the header of a block seen in an
// earlier pass (Block::file_offset, first_line, index, first_sequence), for a pass that
// re-reads only the part of the database it did not keep.
struct ReadStart {
  std::uint64_t byte = 0;     // offset in the (uncompressed) text; at a header unless 0
  std::int64_t line = 1;      // line number of that byte
  std::int64_t block = 0;     // index of the first block read
  std::int64_t sequence = 0;  // database index of the first sequence read
};

struct ReaderOptions {
  std::size_t block_residues = static_cast<std::size_t>(defaults::kBlockResidues);
  // The workers and GPU feeders that take the blocks (0: not said). Given, the first and
  // the last blocks of a plain (mapped) file are made a quarter of block_residues: the
  // first `consumers` blocks, so that every consumer starts early (the chunks after them
  // grow from 2 x block_residues bytes, so that blocks keep coming); those of the last
  // consumers x block_residues bytes, so that they finish together.
  int consumers = 0;
  int threads = defaults::kReaderThreads;  // parser threads; 0 = one per core, at most 4
  std::size_t chunk_bytes = 0;  // bytes read at once; 0 = 4 x block_residues within [8, 64] MiB
  bool simd = true;             // false: the scalar digitizer (tests compare the two)
  // A packed database's checksums are verified during the first pass (BlockStore); false:
  // not by this process (a rank of a job whose rank 0 verifies them: the file is the same).
  bool verify_packed = true;
  ReadStart start;
  // Set: next() returns nullptr once it is true, even while waiting for input that does
  // not come (a stalled pipe); the pass is then incomplete.
  const std::atomic<bool>* stop = nullptr;
};

class BlockReader {
 public:
  // Opens the file (InputError when it cannot be opened, as TextReader) and starts reading.
  BlockReader(const std::string& path, const Alphabet& alphabet, const ReaderOptions& options);
  // Reads a file opened earlier (a duplicate of its descriptor): a FIFO or pipe is opened
  // once, by the caller, and a regular file read again from its start.
  BlockReader(const InputFile& file, const Alphabet& alphabet, const ReaderOptions& options);
  BlockReader(const std::string& path, const Alphabet& alphabet, std::size_t block_residues)
      : BlockReader(path, alphabet, options_for(block_residues)) {}
  ~BlockReader();  // stops and joins the reader's threads
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  // The next block in database order, or nullptr at the end of the file. Throws
  // InputError on bad input (after every block before the problem was handed out).
  // One thread at a time.
  BlockPtr next();

  // Bytes of the file consumed so far (compressed offset for gzip) and its size on disk
  // (0 if unknown): progress. Any thread.
  std::uint64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }
  std::uint64_t file_size() const { return file_size_; }
  // Share of the file handed out by next() so far, in [0, 1]: exact offsets for a plain
  // file; for gzip, what the source inflated (it reads a few chunks ahead). From the
  // thread that calls next().
  double fraction_handed_out() const;

 private:
  static ReaderOptions options_for(std::size_t block_residues) {
    ReaderOptions o;
    o.block_residues = block_residues;
    return o;
  }
  struct Failure {  // an error met by the source or a parser, reported in order by next()
    std::int64_t local_line = 0;  // line within the chunk (1 = its first line); 0: none
    std::string message;
    std::exception_ptr other;  // anything that is not bad input
  };
  struct RawChunk {
    std::int64_t index = 0;
    std::uint64_t offset = 0;    // of its first byte in the text
    const char* text = nullptr;  // `size` bytes; readable up to `readable_end`
    std::size_t size = 0;
    const char* readable_end = nullptr;
    std::unique_ptr<char[]> storage;  // owns `text` for gzip input
    bool first = false;               // starts the file (may begin with blank lines)
    std::size_t block_residues = 0;   // its blocks' size
    bool closes_blocks = false;       // its last block is not joined with the next chunk's
    std::unique_ptr<Failure> failure;
  };
  struct ParsedChunk {
    std::vector<BlockPtr> blocks;  // first_line chunk-relative, index and first_sequence unset
    std::int64_t newlines = 0;
    std::size_t block_residues = 0;
    bool closes_blocks = false;
    std::unique_ptr<Failure> failure;
  };

  void read_chunks();
  void read_mapped_chunks();
  void read_gzip_chunks();
  // Queues a chunk for the parsers (or drops an empty one); false when stopping.
  bool acquire_chunk_slot();
  void queue_chunk(RawChunk chunk);
  void parse_chunks();
  ParsedChunk parse(const RawChunk& raw) const;
  BlockPtr emit(BlockPtr block);

  std::string path_;
  const Alphabet& alphabet_;
  simd::DigitizeTable table_;
  simd::DigitizeLine digitize_;
  std::size_t block_residues_;
  std::size_t chunk_bytes_;
  int consumers_ = 0;
  std::int64_t max_chunks_ = 0;
  void* gz_ = nullptr;         // gzFile (gzip input), used by the source thread only
  std::string gz_opened_as_;   // zlib's name for gz_ ("<fd:N>"), cut from its messages
  const char* map_ = nullptr;  // the mapped file (plain input)
  std::size_t map_size_ = 0;
  std::uint64_t start_offset_ = 0;
  std::uint64_t file_size_ = 0;
  std::atomic<std::uint64_t> bytes_read_{0};

  std::mutex mutex_;
  std::condition_variable source_wait_, parser_wait_, consumer_wait_;
  std::deque<RawChunk> raw_;
  std::map<std::int64_t, ParsedChunk> parsed_;
  std::int64_t chunks_out_ = 0;  // chunks read and not yet taken by next()
  std::int64_t chunks_read_ = 0;
  bool source_done_ = false, stopping_ = false;

  // next()'s own state (one consumer thread).
  std::int64_t next_chunk_ = 0;
  std::deque<BlockPtr> ready_;
  BlockPtr pending_;           // the open last block of the previous chunk
  std::int64_t lines_before_;  // lines of the file before the chunk next() takes next
  std::int64_t next_block_, next_sequence_;
  std::uint64_t handed_offset_ = 0;  // file offset of the last block handed out
  bool failed_ = false;

  std::vector<std::thread> threads_;
  std::thread::native_handle_type source_thread_{};  // woken by a signal when stopping
  const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace duet::io
