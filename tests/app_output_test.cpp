// The output promise, as a user meets it at the edges: a run that fails, is stopped by a
// signal at any phase, or meets a full disk leaves every existing file untouched and no
// temporary file behind, with one clear message and a documented exit status; outputs are
// checked before any work; a FIFO or pipe database is read once; numbers on the command
// line are as strict as in the configuration file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "io/hdf5_file.hpp"
#include "io/output_file.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const std::string kDuet = DUET_BINARY;
const std::string kTutorial = "/usr/share/doc/hmmer/examples/tutorial/";
const std::string kGlobins = kTutorial + "globins4.hmm";
const std::string kExamples = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz";

std::string small_db(const TempDir& dir, int lines = 600) {
  const std::string path = dir.file("db.fa");
  test::run_command("zcat " + kExamples + " | head -n " + std::to_string(lines) + " > " + path);
  return path;
}

// Names in a folder that look like temporary files (".tmp-" anywhere).
std::vector<std::string> temporaries_in(const fs::path& folder) {
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) left.push_back(name);
  }
  return left;
}

// Temporary files of written-through outputs live in $TMPDIR ("duet.tmp-<pid>-<n>").
std::vector<std::string> written_through_temporaries(pid_t pid) {
  std::vector<std::string> left;
  const std::string prefix = "duet.tmp-" + std::to_string(pid) + "-";
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) left.push_back(name);
  }
  return left;
}

// Starts duet with `args` (stdout and stderr to `log`), environment `env` added; returns its
// process id.
pid_t start_duet(const std::vector<std::string>& args, const std::string& log,
                 const std::vector<std::string>& env = {}) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(out, 1);
  ::dup2(out, 2);
  for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(kDuet.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(kDuet.c_str(), argv.data());
  _exit(127);
}

// Waits for `pid` at most `seconds`; the exit status, or -1 if it had to be killed or died
// of a signal.
int wait_exit(pid_t pid, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Whether two score columns hold the same bits (NaN marks scores not computed, and NaN
// never compares equal).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A null device for outputs that are written through: as root, a node of its own in `dir`
// (so that a duet that replaced devices, as root could, harms no system file); else the
// system's /dev/null, which only root could replace.
std::string null_device(const TempDir& dir) {
  const std::string node = dir.file("null");
  if (::geteuid() == 0 && ::mknod(node.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) return node;
  return "/dev/null";
}

// An existing file that a failed run must leave byte for byte as it was.
struct Precious {
  std::string path, bytes;
  fs::file_time_type time;
  Precious(const std::string& p, const std::string& content) : path(p), bytes(content) {
    test::write_file(path, bytes);
    time = fs::last_write_time(path);
  }
  void expect_untouched(const std::string& context) const {
    EXPECT_EQ(test::read_file(path), bytes) << context << ": " << path << " changed";
    EXPECT_EQ(fs::last_write_time(path), time) << context << ": " << path << " rewritten";
  }
};

// ---- outputs checked before any work ----

TEST(OutputPromise, SameFileForTwoOutputsIsRefusedUpFront) {
  TempDir dir;
  const std::string db = small_db(dir);
  const auto r = test::run_command(kDuet + " hmmsearch --h5 " + dir.file("x") + " --tblout " +
                                   dir.file("x") + " " + kGlobins + " " + db);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("--h5 and --tblout name the same file"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("x")));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  // The same file through a link is the same file.
  const Precious table(dir.file("t.tbl"), "old table\n");
  fs::create_symlink(dir.file("t.tbl"), dir.file("link.h5"));
  const auto linked =
      test::run_command(kDuet + " hmmsearch --h5 " + dir.file("link.h5") + " --tblout " +
                        dir.file("t.tbl") + " " + kGlobins + " " + db);
  EXPECT_EQ(linked.status, 1) << linked.output;
  table.expect_untouched("--h5 through a link to --tblout");
}

TEST(OutputPromise, OutputThatIsAnInputIsRefused) {
  TempDir dir;
  const std::string db = small_db(dir);
  const Precious input(db, test::read_file(db));
  const auto r = test::run_command(kDuet + " hmmsearch --h5 " + db + " " + kGlobins + " " + db);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("it is an input of this run"), std::string::npos) << r.output;
  input.expect_untouched("--h5 on the database");
  const auto table = test::run_command(kDuet + " hmmsearch --tblout " + kGlobins + " --h5 " +
                                       dir.file("o.h5") + " " + kGlobins + " " + db);
  EXPECT_EQ(table.status, 1) << table.output;
  EXPECT_FALSE(fs::exists(dir.file("o.h5")));
}

TEST(OutputPromise, TableThatIsAFolderIsRefusedBeforeTheSearch) {
  TempDir dir;
  const std::string db = small_db(dir);
  fs::create_directory(dir.file("tables"));
  const auto r = test::run_command(kDuet + " hmmsearch --h5 " + dir.file("o.h5") + " --tblout " +
                                   dir.file("tables") + " " + kGlobins + " " + db);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tables: cannot create output file: it is a folder"), std::string::npos)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_FALSE(fs::exists(dir.file("o.h5")));
}

// A link is followed (the file it leads to is replaced, the link stays); a FIFO is written
// through, never replaced by a regular file.
TEST(OutputPromise, LinksAndFifosAreWrittenThrough) {
  TempDir dir;
  const std::string db = small_db(dir);
  const auto plain =
      test::run_command(kDuet + " hmmsearch --quiet --h5 " + dir.file("plain.h5") + " --tblout " +
                        dir.file("plain.tbl") + " " + kGlobins + " " + db);
  ASSERT_EQ(plain.status, 0) << plain.output;
  test::write_file(dir.file("target.tbl"), "old\n");
  fs::create_symlink(dir.file("target.tbl"), dir.file("link.tbl"));
  ASSERT_EQ(::mkfifo(dir.file("out.fifo").c_str(), 0644), 0);
  // A reader of the FIFO, as a pipeline would have.
  std::thread reader(
      // Bounded: a duet that never writes into the FIFO fails the test rather than hang it.
      [&] {
        test::run_command("timeout 60 cat " + dir.file("out.fifo") + " > " +
                          dir.file("from_fifo.h5"));
      });
  const auto r = test::run_command(kDuet + " hmmsearch --quiet --h5 " + dir.file("out.fifo") +
                                   " --tblout " + dir.file("link.tbl") + " " + kGlobins + " " + db);
  reader.join();
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir.file("link.tbl")));
  // The same table, but for the command line it records.
  const auto without_command_line = [](std::string text) {
    const auto at = text.find("# Option settings:");
    return at == std::string::npos ? text : text.erase(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(without_command_line(test::read_file(dir.file("target.tbl"))),
            without_command_line(test::read_file(dir.file("plain.tbl"))));
  EXPECT_NE(test::read_file(dir.file("target.tbl")), "old\n");
  EXPECT_EQ(fs::status(dir.file("out.fifo")).type(), fs::file_type::fifo);
  const io::Hdf5Reader a(dir.file("plain.h5")), b(dir.file("from_fifo.h5"));
  EXPECT_TRUE(same_bits(a.read_floats("/results/hmmsearch/globins4/forward_bits"),
                        b.read_floats("/results/hmmsearch/globins4/forward_bits")));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  // A device stays the device, for both outputs at once.
  const std::string null = null_device(dir);
  const auto through = test::run_command(kDuet + " hmmsearch --quiet --h5 " + null + " --tblout " +
                                         null + " " + kGlobins + " " + db);
  EXPECT_EQ(through.status, 0) << through.output;
  EXPECT_EQ(fs::status(null).type(), fs::file_type::character);
}

// A device that refuses the copy (the full device: every write fails) fails the run, and
// the HDF5 output, renamed only after every copy succeeded, is not replaced.
TEST(OutputPromise, FailedCopyIntoADeviceReplacesNoFile) {
  TempDir dir;
  const std::string db = small_db(dir);
  const Precious old(dir.file("o.h5"), "earlier results\n");
  std::string full = dir.file("full");
  if (::geteuid() != 0 || ::mknod(full.c_str(), S_IFCHR | 0666, ::makedev(1, 7)) != 0)
    full = "/dev/full";
  const auto r = test::run_command(kDuet + " hmmsearch --quiet --h5 " + dir.file("o.h5") +
                                   " --tblout " + full + " " + kGlobins + " " + db);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  old.expect_untouched("failed copy into a device");
  EXPECT_EQ(fs::status(full).type(), fs::file_type::character);
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// ---- strict numbers and thread counts ----

TEST(OutputPromise, CommandLineNumbersAreAsStrictAsTheConfiguration) {
  TempDir dir;
  const std::string db = small_db(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-E nan", "-E must be a finite number, not nan"},
      {"-T nan", "-T must be a finite number, not nan"},
      {"-Z nan", "-Z must be a finite number, not nan"},
      {"-Z inf", "-Z must be a finite number, not inf"},
      {"-E 0", "-E must be > 0, not 0"},
      {"--F1 nan", "--F1 must be a finite number, not nan"},
      {"--F2 2", "--F2 must be in (0, 1], not 2"},
      {"--static-cpu-fraction nan", "--static-cpu-fraction must be a finite number, not nan"},
      {"--cpu 100000", "--cpu must be in [0, 1024], not 100000"},
      {"--block-residues 0", "--block-residues must be in [1, 4294967296], not 0"},
      {"--worker-nice 20", "--worker-nice must be in [0, 19], not 20"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = test::run_command(kDuet + " hmmsearch " + args + " --h5 " + dir.file("o.h5") +
                                     " " + kGlobins + " " + db);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << ": " << r.output;
  }
  // The same rule in the configuration file, with its line.
  test::write_file(dir.file("cpu.toml"), "[run]\ncpu = 100000\n");
  const auto r = test::run_command(kDuet + " hmmsearch --config " + dir.file("cpu.toml") +
                                   " --h5 " + dir.file("o.h5") + " " + kGlobins + " " + db);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("cpu.toml:2: 'cpu' must be in [0, 1024], not 100000"), std::string::npos)
      << r.output;
  // pairhmm checks its numbers with the same rules.
  const auto pair = test::run_command(kDuet + " pairhmm --static-cpu-fraction nan --cpu 2 --h5 " +
                                      dir.file("p.h5") + " " + DUET_PAIRHMM_DATA "/tiny.in");
  EXPECT_EQ(pair.status, 2) << pair.output;
  EXPECT_NE(pair.output.find("--static-cpu-fraction must be a finite number"), std::string::npos)
      << pair.output;
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_FALSE(fs::exists(dir.file("o.h5")));
}

// ---- a database that cannot be read twice ----

// Writes `source` into the FIFO at `fifo` from a thread of its own (the writer a shell's
// process substitution would be); join() waits for it.
class FifoWriter {
 public:
  FifoWriter(const std::string& fifo, const std::string& source)
      : thread_([fifo, source] { test::run_command("timeout 60 cat " + source + " > " + fifo); }) {}
  ~FifoWriter() { thread_.join(); }

 private:
  std::thread thread_;
};

TEST(OutputPromise, FifoDatabaseIsReadOnceForSeveralModels) {
  TempDir dir;
  const std::string db = small_db(dir, 4000);
  const std::string models = dir.file("two.hmm");
  test::run_command("cat " + kGlobins + " " + kTutorial + "fn3.hmm > " + models);
  const auto plain =
      test::run_command("timeout 60 " + kDuet + " hmmsearch --quiet --h5 " + dir.file("plain.h5") +
                        " --tblout " + dir.file("plain.tbl") + " " + models + " " + db);
  ASSERT_EQ(plain.status, 0) << plain.output;
  const std::string fifo = dir.file("db.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  {
    // Every block kept: both models search the whole database, as from the file.
    FifoWriter writer(fifo, db);
    const auto r =
        test::run_command("timeout 60 " + kDuet + " hmmsearch --quiet --h5 " + dir.file("fifo.h5") +
                          " --tblout " + dir.file("fifo.tbl") + " " + models + " " + fifo);
    ASSERT_EQ(r.status, 0) << r.output;
  }
  EXPECT_EQ(test::read_tblout(dir.file("fifo.tbl")).size(),
            test::read_tblout(dir.file("plain.tbl")).size());
  const io::Hdf5Reader a(dir.file("plain.h5")), b(dir.file("fifo.h5"));
  for (const std::string q : {"globins4", "fn3"}) {
    const std::string g = "/results/hmmsearch/" + q;
    EXPECT_EQ(a.read_int64(g + "/index"), b.read_int64(g + "/index")) << q;
    EXPECT_TRUE(same_bits(a.read_floats(g + "/forward_bits"), b.read_floats(g + "/forward_bits")))
        << q;
  }
  {
    // Not all of it fits the budget: a clear error, not a second model that saw nothing.
    FifoWriter writer(fifo, db);
    const auto r =
        test::run_command("timeout 60 " + kDuet + " hmmsearch --quiet --reuse-memory 64K --h5 " +
                          dir.file("small.h5") + " " + models + " " + fifo);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("db.fifo: cannot be read twice"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--reuse-memory"), std::string::npos) << r.output;
  }
  {
    // No budget at all: refused before reading.
    FifoWriter writer(fifo, db);
    const auto r =
        test::run_command("timeout 60 " + kDuet + " hmmsearch --quiet --reuse-memory 0 --h5 " +
                          dir.file("none.h5") + " " + models + " " + fifo);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("cannot be read twice"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.file("small.h5")));
  EXPECT_FALSE(fs::exists(dir.file("none.h5")));
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// A FIFO with no writer yet, or a writer that stalls: the open or the read waits, and a
// signal ends the run at once with its status.
TEST(OutputPromise, SignalEndsAWaitOnAFifo) {
  TempDir dir;
  const std::string fifo = dir.file("db.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const pid_t opening =
      start_duet({"hmmsearch", "--h5", dir.file("o.h5"), kGlobins, fifo}, dir.file("opening.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(::kill(opening, SIGINT), 0);
  EXPECT_EQ(wait_exit(opening, 10), 130) << test::read_file(dir.file("opening.log"));

  // A writer that sends one record and then holds the FIFO open without writing.
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    const char record[] = ">a\nACDEFGHIKLMNPQRSTVWY\n";
    if (::write(fd, record, sizeof record - 1) < 0) _exit(1);
    ::sleep(30);
    _exit(0);
  }
  const pid_t reading =
      start_duet({"hmmsearch", "--h5", dir.file("o.h5"), kGlobins, fifo}, dir.file("reading.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(::kill(reading, SIGTERM), 0);
  EXPECT_EQ(wait_exit(reading, 10), 143) << test::read_file(dir.file("reading.log"));
  ::kill(writer, SIGKILL);
  ::waitpid(writer, nullptr, 0);
  EXPECT_NE(test::read_file(dir.file("reading.log")).find("terminated; no output written"),
            std::string::npos);
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_FALSE(fs::exists(dir.file("o.h5")));
}

// ---- fault injection: signals at every phase, a full disk, failing GPU batches ----

TEST(OutputPromise, SignalAtEveryPhaseLeavesExistingFilesAndNoTemporary) {
  TempDir dir;
  const std::string db = small_db(dir);
  const Precious h5(dir.file("o.h5"), "earlier results\n");
  const Precious table(dir.file("o.tbl"), "earlier table\n");
  const std::vector<std::string> phases = {"checked options", "read models",     "opened inputs",
                                           "search starts",   "search returned", "wrote HDF5",
                                           "wrote tables"};
  for (const auto& [signal, status] :
       std::vector<std::pair<int, int>>{{SIGINT, 130}, {SIGTERM, 143}, {SIGHUP, 129}}) {
    for (const std::string& phase : phases) {
      const std::string context = "signal " + std::to_string(signal) + " at '" + phase + "'";
      const std::string setting = "DUET_DEBUG_SIGNAL_AT=" + std::to_string(signal) + "@" + phase;
      const pid_t pid = start_duet(
          {"hmmsearch", "--quiet", "--h5", h5.path, "--tblout", table.path, kGlobins, db},
          dir.file("run.log"), {setting});
      const int exit_status = wait_exit(pid, 60);
      EXPECT_EQ(exit_status, status) << context << ": " << test::read_file(dir.file("run.log"));
      h5.expect_untouched(context);
      table.expect_untouched(context);
      EXPECT_TRUE(temporaries_in(dir.path()).empty()) << context;
    }
  }
  // pairhmm keeps the same promise.
  for (const std::string phase :
       {"checked options", "read input", "search starts", "search returned", "wrote HDF5"}) {
    const pid_t pid = start_duet(
        {"pairhmm", "--quiet", "--cpu", "2", "--h5", h5.path, DUET_PAIRHMM_DATA "/tiny.in"},
        dir.file("run.log"), {"DUET_DEBUG_SIGNAL_AT=15@" + phase});
    EXPECT_EQ(wait_exit(pid, 60), 143) << phase << ": " << test::read_file(dir.file("run.log"));
    h5.expect_untouched("pairhmm, SIGTERM at " + phase);
    EXPECT_TRUE(temporaries_in(dir.path()).empty()) << phase;
  }
  // Written-through outputs keep their temporary files in $TMPDIR: none is left there.
  const std::string null = null_device(dir);
  const pid_t pid =
      start_duet({"hmmsearch", "--quiet", "--h5", null, "--tblout", null, kGlobins, db},
                 dir.file("run.log"), {"DUET_DEBUG_SIGNAL_AT=15@wrote tables"});
  EXPECT_EQ(wait_exit(pid, 60), 143);
  EXPECT_TRUE(written_through_temporaries(pid).empty());
}

// A small file system of its own (tmpfs, where the test may mount one), else a file-size
// limit (ulimit -f): either way the writes fail part way through.
class FullDisk {
 public:
  explicit FullDisk(const TempDir& dir) : folder_(dir.file("small")) {
    fs::create_directory(folder_);
    mounted_ = ::mount("tmpfs", folder_.c_str(), "tmpfs", 0, "size=256k") == 0;
  }
  ~FullDisk() {
    if (mounted_) ::umount(folder_.c_str());
  }
  std::string file(const std::string& name) const { return folder_ + "/" + name; }
  // The shell prefix that makes writes fail past about 256 KiB where no tmpfs could be made.
  std::string limit() const { return mounted_ ? "" : "ulimit -f 256; "; }
  bool mounted() const { return mounted_; }

 private:
  std::string folder_;
  bool mounted_ = false;
};

TEST(OutputPromise, FullDiskFailsCleanlyAndKeepsEarlierFiles) {
  TempDir dir;
  const FullDisk disk(dir);
  std::cout << "[ full disk] " << (disk.mounted() ? "256 KiB tmpfs" : "ulimit -f 256") << "\n";
  const Precious h5(disk.file("o.h5"), "earlier results\n");
  const Precious table(disk.file("o.tbl"), "earlier table\n");
  const auto r =
      test::run_command(disk.limit() + kDuet + " hmmsearch --max --quiet --h5 " + h5.path +
                        " --tblout " + table.path + " " + kTutorial + "Pkinase.hmm " + kExamples);
  EXPECT_EQ(r.status, 1) << r.output;  // not a crash (139) in HDF5's exit handler
  EXPECT_NE(r.output.find("duet: error: " + h5.path + ": "), std::string::npos) << r.output;
  EXPECT_TRUE(r.output.find("No space left on device") != std::string::npos ||
              r.output.find("File too large") != std::string::npos)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  h5.expect_untouched("full disk");
  table.expect_untouched("full disk");
  EXPECT_TRUE(temporaries_in(fs::path(h5.path).parent_path()).empty());

  // pairhmm on the same disk.
  const auto pair = test::run_command(disk.limit() + kDuet + " pairhmm --quiet --cpu 2 --h5 " +
                                      h5.path + " " + DUET_PAIRHMM_DATA "/10s.in");
  if (pair.status == 0) {
    // Its results fit the disk: the promise is then about success, and the file is whole.
    EXPECT_TRUE(io::Hdf5Reader(h5.path).exists("/results/pairhmm/log10_likelihood"));
  } else {
    EXPECT_EQ(pair.status, 1) << pair.output;
    h5.expect_untouched("pairhmm, full disk");
  }
  EXPECT_TRUE(temporaries_in(fs::path(h5.path).parent_path()).empty());
}

// A GPU batch that fails is redone by the CPU: the outputs are those of a CPU-only run.
// With --gpu-only every batch is the GPU's, so some fail however the threads are scheduled
// (in the default mode a loaded machine's CPU workers could take all but one batch).
TEST(OutputPromise, FailingGpuBatchesLoseNothing) {
  TempDir dir;
  const std::string db = small_db(dir, 4000);
  const auto cpu = test::run_command(
      kDuet + " hmmsearch --no-gpu --quiet --block-residues 20000 --h5 " + dir.file("cpu.h5") +
      " --tblout " + dir.file("cpu.tbl") + " " + kGlobins + " " + db);
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  const auto faulty = test::run_command(
      "DUET_DEBUG_TEST_GPU=1 DUET_DEBUG_GPU_FAULT_EVERY=2 " + kDuet +
      " hmmsearch --gpu-only --block-residues 20000 --gpu-batch-blocks 2 --h5 " +
      dir.file("gpu.h5") + " --tblout " + dir.file("gpu.tbl") + " " + kGlobins + " " + db);
  ASSERT_EQ(faulty.status, 0) << faulty.output;
  const io::Hdf5Reader a(dir.file("cpu.h5")), b(dir.file("gpu.h5"));
  EXPECT_GT(b.attribute_int("/run", "gpu_faults"), 0);
  const std::string g = "/results/hmmsearch/globins4";
  EXPECT_EQ(a.read_int64(g + "/index"), b.read_int64(g + "/index"));
  EXPECT_TRUE(same_bits(a.read_floats(g + "/forward_bits"), b.read_floats(g + "/forward_bits")));
  EXPECT_EQ(test::read_tblout(dir.file("cpu.tbl")).size(),
            test::read_tblout(dir.file("gpu.tbl")).size());
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
}

// ---- the OutputSet's rules, directly ----

TEST(OutputSet, RefusesDuplicatesAndInputsButNotTwoDevices) {
  TempDir dir;
  test::write_file(dir.file("in.fa"), ">a\nACD\n");
  io::OutputSet set({dir.file("in.fa")});
  set.add(dir.file("a.h5"), "-o");
  EXPECT_THROW(set.add(dir.file("a.h5"), "--tblout"), InputError);
  EXPECT_THROW(set.add(dir.path().string() + "/./a.h5", "--tblout"), InputError);
  EXPECT_THROW(set.add(dir.file("in.fa"), "--tblout"), InputError);
  io::OutputSet devices({});
  const std::string null = null_device(dir);
  devices.add(null, "-o");
  EXPECT_NO_THROW(devices.add(null, "--tblout"));
}

TEST(OutputSet, UncommittedOutputsLeaveNothing) {
  TempDir dir;
  {
    io::OutputSet set({});
    io::OutputFile& a = set.add(dir.file("a.txt"), "-o");
    test::write_file(a.create_temporary(), "content");
    io::OutputFile& device = set.add(null_device(dir), "--tblout");
    test::write_file(device.create_temporary(), "content");
    EXPECT_TRUE(fs::exists(device.temporary_path()));
    EXPECT_FALSE(temporaries_in(dir.path()).empty());
  }
  EXPECT_TRUE(temporaries_in(dir.path()).empty());
  EXPECT_TRUE(written_through_temporaries(::getpid()).empty());
}

}  // namespace
}  // namespace duet
