// The /trace table of a run: one row per batch, as parallel 1-D datasets in `group`.
#pragma once

#include <string>
#include <vector>

#include "io/hdf5_file.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

// Writes rank (0 unless an MPI job), worker, device, stage, start, end, first_block,
// blocks, `unit` (the number of sequences or pairs of each row), cells and failed; with
// `residue_columns`, also residues and survivors. Sets the device_codes attribute.
void write_trace_rows(io::Hdf5Writer& file, const std::string& group,
                      const std::vector<scheduler::TraceRow>& trace, const std::string& unit,
                      bool residue_columns);

}  // namespace duet::app
