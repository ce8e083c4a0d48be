// The hmmsearch result file's writer alone: the CPU seconds ResultStream's thread takes
// per query for QUERIES queries of ROWS target rows each (the MSV survivors a query
// records), in blocks of 64 rows, as a many-model run hands them over; then the file is
// committed and read back to check every query's rows and attributes.
// Usage: result_writer_bench OUT.h5 [queries] [rows] [repeats]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/hmmsearch/result_stream.hpp"
#include "core/thread_cpu.hpp"
#include "io/hdf5_file.hpp"

namespace {

duet::app::TargetRecord record(std::size_t query, std::size_t row) {
  duet::app::TargetRecord t;
  t.index = static_cast<std::int64_t>(row * 7 + query % 7);
  t.name = "sp|P" + std::to_string(100000 + row) + "|PROT" + std::to_string(row) + "_HUMAN";
  t.description = "Synthetic protein " + std::to_string(row) + " OS=Homo sapiens OX=9606";
  t.length = static_cast<std::int32_t>(100 + row % 900);
  t.scores.msv_bits = static_cast<float>(row % 50);
  t.scores.pvalue = 1.0 / static_cast<double>(row + 2);
  t.evalue = t.scores.pvalue * 5000;
  return t;
}

// The CPU seconds the result writer's threads have used so far (added as each one ends).
double writer_seconds() {
  for (const auto& [kind, seconds] : duet::thread_cpu_seconds())
    if (kind == "column writer") return seconds;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: result_writer_bench OUT.h5 [queries] [rows] [repeats]\n");
    return 2;
  }
  const std::string path = argv[1];
  const std::size_t queries = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000;
  const std::size_t rows = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 100;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 3;
  std::vector<std::string> names, groups;
  for (std::size_t q = 0; q < queries; ++q) {
    names.push_back("model" + std::to_string(q));
    groups.push_back("/results/hmmsearch/" + names.back());
  }
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const double writer_before = writer_seconds();
    {
      duet::io::Hdf5Writer file(path);
      {
        duet::app::ResultStream stream(file, names);
        for (std::size_t q = 0; q < queries; ++q) {
          duet::app::QueryResult result;
          result.name = "model" + std::to_string(q);
          result.M = 170;
          result.Z = 5000;
          stream.begin_query(q);
          std::vector<duet::app::TargetRecord> block;
          for (std::size_t i = 0; i < rows; ++i) {
            block.push_back(record(q, i));
            result.targets.push_back(block.back());
            if (block.size() == 64 || i + 1 == rows) {
              stream.targets(q, block);
              block.clear();
            }
          }
          stream.end_query(q, result);  // the last one waits for the writer
        }
      }
      file.commit();
    }
    const double writer_cpu = writer_seconds() - writer_before;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Read back: every query's rows and its attributes.
    const duet::io::Hdf5Reader reader(path);
    for (std::size_t q = 0; q < queries; ++q) {
      const auto target_names = reader.read_strings(groups[q] + "/name");
      const auto evalues = reader.read_doubles(groups[q] + "/evalue");
      if (target_names.size() != rows || evalues.size() != rows ||
          target_names.back() != record(q, rows - 1).name ||
          evalues.back() != record(q, rows - 1).evalue ||
          reader.attribute_string(groups[q], "query_name") != "model" + std::to_string(q)) {
        std::fprintf(stderr, "result_writer_bench: query %zu read back wrong\n", q);
        return 1;
      }
    }
    std::printf("queries %zu rows %zu: writer %.3f CPU-s (%.1f us per query), wall %.3f s\n",
                queries, rows, writer_cpu, writer_cpu * 1e6 / static_cast<double>(queries), wall);
  }
  return 0;
}
