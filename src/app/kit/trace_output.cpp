// write_trace_rows: see trace_output.hpp.
#include "app/kit/trace_output.hpp"

#include <cstdint>

namespace duet::app {

void write_trace_rows(io::Hdf5Writer& file, const std::string& g,
                      const std::vector<scheduler::TraceRow>& trace, const std::string& unit,
                      bool residue_columns) {
  const std::size_t n = trace.size();
  std::vector<std::int32_t> rank(n), worker(n);
  std::vector<std::uint8_t> device(n), failed(n);
  std::vector<std::string> stage(n);
  std::vector<double> start(n), end(n);
  std::vector<std::int64_t> block(n), blocks(n), units(n), residues(n), cells(n), survivors(n);
  for (std::size_t i = 0; i < n; ++i) {
    const scheduler::TraceRow& r = trace[i];
    rank[i] = r.rank;
    worker[i] = r.worker;
    device[i] = static_cast<std::uint8_t>(r.device);
    failed[i] = r.failed ? 1 : 0;
    stage[i] = r.stage;
    start[i] = r.start;
    end[i] = r.end;
    block[i] = r.block;
    blocks[i] = r.blocks;
    units[i] = r.sequences;
    residues[i] = r.residues;
    cells[i] = r.cells;
    survivors[i] = r.survivors;
  }
  file.create_group(g);
  file.write(g + "/rank", rank);
  file.write(g + "/worker", worker);
  file.write(g + "/device", device);
  file.write(g + "/stage", stage);
  file.write(g + "/start", start);
  file.write(g + "/end", end);
  file.write(g + "/first_block", block);
  file.write(g + "/blocks", blocks);
  file.write(g + "/" + unit, units);
  if (residue_columns) file.write(g + "/residues", residues);
  file.write(g + "/cells", cells);
  if (residue_columns) file.write(g + "/survivors", survivors);
  file.write(g + "/failed", failed);
  file.set_attribute(g, "device_codes", std::string("0 CPU worker, 1 GPU feeder"));
}

}  // namespace duet::app
