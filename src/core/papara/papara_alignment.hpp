// The alignment PaPaRa 2.5 writes (SPEC.md §3.4, §1 Outputs): each query re-aligned to its
// best edge with a full traceback, the insertion columns every query's inserted bases need,
// and the alignment file (PHYLIP, or FASTA with -g).
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "core/papara/papara_input.hpp"
#include "core/papara/papara_kernel.hpp"
#include "core/papara/papara_reference.hpp"

namespace duet::papara {

// One step of an alignment, in column order.
enum TraceCode : std::uint8_t {
  kColumnAndBase = 0,  // the query's next base sits in the next reference column
  kColumnOnly = 1,     // a gap in the query against the next column
  kBaseOnly = 2,       // the query's next base is inserted before the next column
};

struct Trace {
  std::int32_t score = 0;           // the traceback's own (int32) score
  std::vector<std::uint8_t> codes;  // TraceCode, first column first
};

// The query aligned to `edge`'s profile: the §3.1 recurrence in int32 with U(-1, j) = 0 and
// PaPaRa's tie rules.
Trace traceback(std::span<const std::uint8_t> query, const ProfileView& profiles, int edge,
                const Scoring& scoring);

// The rows of the output alignment: references (original characters, '-' in insertion
// columns; with `no_reference_gaps`, normalised and without insertion columns: DNA in
// upper case with U as T and N ? . as '-', protein in upper case) then queries (upper-case
// residue characters), each `columns` long.
struct AlignedRows {
  std::vector<std::string> names, rows;
  std::size_t references = 0;
  std::size_t columns = 0;
};

AlignedRows aligned_rows(const Reference& reference, std::span<const Query> queries,
                         std::span<const Trace> traces, bool no_reference_gaps);

// PaPaRa's alignment file: PHYLIP ("rows columns", then each name padded with spaces to
// one more than the longest name, and its row) or FASTA (">name" and the row).
void write_alignment(std::ostream& out, const AlignedRows& rows, bool fasta);

}  // namespace duet::papara
