// Where whole-file writes land (through symbolic links, never over devices or folders), what a
// killed writer leaves behind, and run names that must stay one folder under the runs folder.
#include <QtTest>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/run_store.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

}  // namespace

class TestFiles : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path dir_;

 private slots:
  void init() {
    dir_ = fs::path(tmp_.path().toStdString()) / QTest::currentTestFunction();
    fs::create_directories(dir_);
  }

  void writesThroughSymlinks() {
    const fs::path real = dir_ / "real.json", link = dir_ / "link.json", link2 = dir_ / "link2.json";
    write_file_atomic(real, "old");
    fs::create_symlink("real.json", link);  // relative, as `ln -s` makes them
    fs::create_symlink(link, link2);        // a chain
    write_file_atomic(link2, "new");
    QVERIFY(fs::is_symlink(link));
    QVERIFY(fs::is_symlink(link2));
    QCOMPARE(read_text_file(real), std::string("new"));
    QCOMPARE(names_in(dir_), (std::set<std::string>{"real.json", "link.json", "link2.json"}));

    // A dangling link: its target is created, the link stays.
    fs::create_directory(dir_ / "sub");
    fs::create_symlink("sub/later.json", dir_ / "dangling.json");
    write_file_atomic(dir_ / "dangling.json", "x");
    QVERIFY(fs::is_symlink(dir_ / "dangling.json"));
    QCOMPARE(read_text_file(dir_ / "sub" / "later.json"), std::string("x"));
  }

  void refusesWhatIsNotAFile() {
    const std::string folder = input_error_of([&] { write_file_atomic(dir_, "x"); });
    QVERIFY2(contains(folder, "is a directory"), folder.c_str());
    const std::string device = input_error_of([&] { write_file_atomic("/dev/null", "x"); });
    QVERIFY2(contains(device, "/dev/null is a character device"), device.c_str());
    QVERIFY(fs::is_character_file("/dev/null"));
    // Through a link, the message names both.
    fs::create_symlink("/dev/null", dir_ / "null.json");
    const std::string linked = input_error_of([&] { write_file_atomic(dir_ / "null.json", "x"); });
    QVERIFY2(contains(linked, "null.json (a link to /dev/null) is a character device"), linked.c_str());
    QVERIFY(fs::is_symlink(dir_ / "null.json"));
    // A link loop is refused, not followed forever.
    fs::create_symlink("b", dir_ / "a");
    fs::create_symlink("a", dir_ / "b");
    QVERIFY(contains(input_error_of([&] { write_file_atomic(dir_ / "a", "x"); }), "too many levels"));
  }

  void removesTempFilesOfKilledWriters() {
    const fs::path file = dir_ / "reg.json";
    write_file_atomic(file, "1");
    // One left by a killed writer (nobody holds it), one a live writer holds, one of another file.
    const fs::path stale = dir_ / ".reg.json.tmp.AbC123", live = dir_ / ".reg.json.tmp.XyZ789",
                   other = dir_ / ".other.json.tmp.AbC123";
    for (const auto& p : {stale, live, other}) std::ofstream(p) << "partial";
    const int fd = ::open(live.c_str(), O_RDONLY);
    QVERIFY(fd >= 0);
    QCOMPARE(::flock(fd, LOCK_EX), 0);
    write_file_atomic(file, "2");
    QCOMPARE(read_text_file(file), std::string("2"));
    QCOMPARE(names_in(dir_), (std::set<std::string>{"reg.json", live.filename().string(), other.filename().string()}));
    ::close(fd);  // the live writer dies: the next write removes its file
    write_file_atomic(file, "3");
    QCOMPARE(names_in(dir_), (std::set<std::string>{"reg.json", other.filename().string()}));
  }

  void runNamesStayInTheRunsFolder_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("message");
    QTest::newRow("parent") << "../escape"
                            << "is a path";
    QTest::newRow("nested") << "a/b"
                            << "is a path";
    QTest::newRow("absolute") << "/tmp/escape"
                              << "is a path";
    QTest::newRow("dot") << "."
                         << "names a folder";
    QTest::newRow("dotdot") << ".."
                            << "names a folder";
    QTest::newRow("empty") << ""
                           << "empty";
    QTest::newRow("too long") << QString(300, 'a') << "longer than the";
  }

  void runNamesStayInTheRunsFolder() {
    QFETCH(QString, name);
    QFETCH(QString, message);
    const fs::path runs = dir_ / "runs";
    const std::string e = input_error_of([&] { run_folder(runs, name.toStdString()); });
    QVERIFY2(contains(e, message.toStdString()), e.c_str());
    QVERIFY(!fs::exists(runs));
  }

  void runNamesThatFit() {
    const fs::path runs = dir_ / "runs";
    QCOMPARE(run_folder(runs, "gemm_m16"), runs / "gemm_m16");
    QCOMPARE(run_folder(runs, "..hidden.."), runs / "..hidden..");
    // The limit is the file system's: a name of exactly that length is created.
    const long max = ::pathconf(dir_.c_str(), _PC_NAME_MAX);
    QVERIFY(max > 0);
    const fs::path longest = run_folder(dir_, std::string(static_cast<std::size_t>(max), 'n'));
    QVERIFY(fs::create_directory(longest));
  }
};

QTEST_APPLESS_MAIN(TestFiles)
#include "test_files.moc"
