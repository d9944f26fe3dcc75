// Files that are not regular files, and files larger than ktune reads: every reader of a user's
// file (registry, run metadata, trials.csv, search space, kernel spec and source, Kernel Tuner
// cache) refuses a device (a link to /dev/zero never ends), a FIFO (opening it waits for a
// writer) and a file over the limit, naming the file, before reading any of it. Each read runs in
// a child process with little memory to spare and a time limit, so a reader that does read
// /dev/zero or waits on a FIFO fails the test instead of taking the machine's memory or hanging.
#include <QtTest>

#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "ktune/backends/cuda_spec.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "ktune/kernel_spec.h"
#include "ktune/kernel_tuner_import.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"
#include "ktune/search_space.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

// Caps the address space at what the process has now plus `spare` bytes (ASan's shadow is
// already mapped, so this holds with sanitizers too): reading /dev/zero ends in bad_alloc.
void cap_memory(std::size_t spare) {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  const rlim_t limit = pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) + spare;
  const rlimit r{limit, limit};
  ::setrlimit(RLIMIT_AS, &r);
}

// The message of the InputError `read` throws in a child process; "returned" when it throws
// none, "timed out" when it is still reading after `timeout_s`, else what ended it.
std::string refusal_in_child(const std::function<void()>& read, int timeout_s = 20) {
  int fds[2];
  if (::pipe(fds) != 0) return "no pipe";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    cap_memory(std::size_t{512} << 20);
    std::string message;
    try {
      read();
      message = "returned";
    } catch (const InputError& e) {
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("not an InputError: ") + e.what();
    }
    [[maybe_unused]] const ssize_t n = ::write(fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (char buf[4096];;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      ::kill(pid, SIGKILL);
      out = "timed out";
      break;
    }
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status) && out != "timed out")
    out += " (child killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  return out;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// A reader of users' files: the file it reads (which the test replaces) and the call.
struct Reader {
  fs::path file;
  std::function<void()> read;
};

// Each reader's file in `dir`, in a state where only that file is wrong.
Reader reader(const std::string& name, const fs::path& dir) {
  const fs::path run = dir / "run";
  fs::create_directories(run);
  if (name == "registry") return {dir / "reg.json", [f = dir / "reg.json"] { Registry::load(f); }};
  if (name == "run metadata") return {run / "run_metadata.json", [run] { RunStore::read_metadata(run); }};
  if (name == "trials.csv") return {run / "trials.csv", [run] { RunStore::read_trials(run); }};
  if (name == "search space") return {dir / "space.json", [f = dir / "space.json"] { SearchSpace::load(f); }};
  if (name == "kernel spec")
    return {dir / "spec.json", [f = dir / "spec.json"] { KernelSpec::load(f, cuda_spec_dialect()); }};
  if (name == "kernel source") {
    // The spec is the shipped gemm's, in a folder of its own with the source beside it.
    nlohmann::json spec = read_json_file(fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda/gemm.json", "spec");
    spec["source"] = "gemm.cu";
    write_file(dir / "spec.json", spec.dump());
    return {dir / "gemm.cu", [f = dir / "spec.json"] { KernelSpec::load(f, cuda_spec_dialect()); }};
  }
  if (name == "Kernel Tuner cache")
    return {dir / "cache.json", [f = dir / "cache.json"] { read_kernel_tuner_cache(f); }};
  return {dir / "plain.txt", [f = dir / "plain.txt"] { read_text_file(f); }};
}

void readers_data(bool with_source) {
  QTest::addColumn<QString>("name");
  for (const char* n :
       {"registry", "run metadata", "trials.csv", "search space", "kernel spec", "Kernel Tuner cache", "plain"})
    QTest::newRow(n) << QString(n);
  // A link from the spec's folder to /dev/zero leads outside it, which the spec refuses first.
  if (with_source) QTest::newRow("kernel source") << QString("kernel source");
}

}  // namespace

class TestOddFiles : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path dir_;

 private slots:
  void init() {
    dir_ = fs::path(tmp_.path().toStdString()) / QTest::currentTestFunction();
    if (QTest::currentDataTag()) dir_ /= QTest::currentDataTag();
    fs::create_directories(dir_);
  }

  void linkToDevZeroIsRefused_data() { readers_data(false); }
  void linkToDevZeroIsRefused() {
    QFETCH(QString, name);
    const Reader r = reader(name.toStdString(), dir_);
    fs::create_symlink("/dev/zero", r.file);
    const std::string err = refusal_in_child(r.read);
    QVERIFY2(contains(err, r.file.string() + " (a link to /dev/zero): it is a character device, not a regular file"),
             err.c_str());
  }

  void fifoIsRefusedWithoutWaiting_data() { readers_data(true); }
  void fifoIsRefusedWithoutWaiting() {
    QFETCH(QString, name);
    const Reader r = reader(name.toStdString(), dir_);
    QCOMPARE(::mkfifo(r.file.c_str(), 0600), 0);
    const std::string err = refusal_in_child(r.read);
    QVERIFY2(contains(err, r.file.string() + ": it is a FIFO, not a regular file"), err.c_str());
  }

  void fileOverTheLimitIsRefused_data() { readers_data(true); }
  void fileOverTheLimitIsRefused() {
    QFETCH(QString, name);
    const Reader r = reader(name.toStdString(), dir_);
    write_file(r.file, "{}" + std::string((std::size_t{1} << 20) - 1, ' '));  // 1 MiB and a byte
    const std::string err = refusal_in_child([&] {
      ::setenv(kMaxFileEnv, "1", 1);
      r.read();
    });
    QVERIFY2(contains(err, r.file.string() + ": it is 1.1 MiB, over the limit of 1 MiB per file (set by "
                                             "KTUNE_MAX_FILE_MB); if it is the right file, raise the limit, e.g. "
                                             "KTUNE_MAX_FILE_MB=3"),
             err.c_str());
  }

  void fileAtTheLimitIsRead() {
    const fs::path file = dir_ / "exact.txt";
    write_file(file, std::string(std::size_t{1} << 20, 'x'));
    const std::string err = refusal_in_child([&] {
      ::setenv(kMaxFileEnv, "1", 1);
      if (read_text_file(file).size() != (std::size_t{1} << 20)) throw InputError("read short");
    });
    QCOMPARE(err, std::string("returned"));
  }

  void linkToARegularFileIsRead() {
    write_file(dir_ / "real.txt", "text");
    fs::create_symlink("real.txt", dir_ / "link.txt");
    QCOMPARE(read_text_file(dir_ / "link.txt"), std::string("text"));
  }

  void limitComesFromTheEnvironment_data() {
    QTest::addColumn<QString>("value");
    QTest::addColumn<qulonglong>("bytes");  // 0: refused
    QTest::newRow("unset") << QString() << qulonglong{kDefaultMaxFileMiB << 20};
    QTest::newRow("empty") << "" << qulonglong{kDefaultMaxFileMiB << 20};
    QTest::newRow("3") << "3" << qulonglong{3ULL << 20};
    QTest::newRow("zero") << "0" << qulonglong{0};
    QTest::newRow("negative") << "-1" << qulonglong{0};
    QTest::newRow("fraction") << "1.5" << qulonglong{0};
    QTest::newRow("unit") << "10MB" << qulonglong{0};
    QTest::newRow("word") << "lots" << qulonglong{0};
    QTest::newRow("overflows") << "99999999999999999999" << qulonglong{0};
  }
  void limitComesFromTheEnvironment() {
    QFETCH(QString, value);
    QFETCH(qulonglong, bytes);
    const std::string err = refusal_in_child([&] {
      if (value.isNull())
        ::unsetenv(kMaxFileEnv);
      else
        ::setenv(kMaxFileEnv, value.toStdString().c_str(), 1);
      if (max_file_bytes() != bytes) throw InputError("limit " + std::to_string(max_file_bytes()));
    });
    if (bytes)
      QCOMPARE(err, std::string("returned"));
    else
      QVERIFY2(contains(err, "KTUNE_MAX_FILE_MB='" + value.toStdString() + "' is not a size"), err.c_str());
  }
};

QTEST_APPLESS_MAIN(TestOddFiles)
#include "test_odd_files.moc"
