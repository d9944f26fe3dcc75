// A kernel spec's "source" stays inside the spec's folder: "..", an absolute path or a symlink
// that leads out is refused before the file is read, naming the spec, the source and what to do,
// and never quoting the file; KTUNE_ALLOW_SOURCE_OUTSIDE_SPEC=1 (the CLI's
// --allow-source-outside-spec) lets a trusted spec reach out. The headers a source includes in
// quotes are read from that folder under the same rule.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda_spec.h"
#include "ktune/json_read.h"
#include "ktune/kernel_spec.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

const fs::path kSpecDir = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda";
constexpr const char* kSecret = "TOPSECRET-LINE-42";

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace

class TestSpecSource : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path root() const { return fs::path(tmp_.path().toStdString()); }
  fs::path specDir() const { return root() / "specs" / "mine"; }

  // Writes the built-in gemm spec with `source` into specs/mine/spec.json and loads it.
  KernelSpec load(const std::string& source) {
    nlohmann::json j = read_json_file(kSpecDir / "gemm.json", "kernel spec");
    j["source"] = source;
    write_file(specDir() / "spec.json", j.dump(2));
    return KernelSpec::load(specDir() / "spec.json", cuda_spec_dialect());
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qunsetenv(kAllowSourceOutsideSpecEnv);
    fs::create_directories(specDir() / "sub");
    write_file(root() / "secret.txt", std::string(kSecret) + "\nroot:x:0:0\n");
    write_file(specDir() / "gemm.cu", "// the kernel\n");
    write_file(specDir() / "sub" / "k.cu", "// the kernel in a subfolder\n");
    fs::create_symlink(root() / "secret.txt", specDir() / "link.cu");
    fs::create_symlink(specDir() / "gemm.cu", specDir() / "sub" / "inner.cu");
    write_file(specDir() / "util.cuh", "// util\n#include \"sub/deep.cuh\"\n");
    write_file(specDir() / "sub" / "deep.cuh", "// deep\n#include \"util.cuh\"\n#include \"toolkit_only.h\"\n");
    fs::create_symlink(root() / "secret.txt", specDir() / "link.cuh");
  }

  // Loads a spec whose source, k.cu, is `text`.
  KernelSpec loadSource(const std::string& text) {
    write_file(specDir() / "k.cu", text);
    return load("k.cu");
  }

  void sourceOutsideTheSpecFolderIsRefused_data() {
    QTest::addColumn<QString>("source");
    QTest::newRow("parent") << "../../secret.txt";
    QTest::newRow("into a subfolder and out") << "sub/../../../secret.txt";
    QTest::newRow("absolute") << QString::fromStdString((root() / "secret.txt").string());
    QTest::newRow("symlink out") << "link.cu";
    QTest::newRow("the system's") << "../../../../../../../../etc/passwd";
  }
  void sourceOutsideTheSpecFolderIsRefused() {
    QFETCH(QString, source);
    const std::string err = input_error_of([&] { load(source.toStdString()); });
    // The spec, the source as written, the folder it must stay in and both ways out.
    const fs::path spec = specDir() / "spec.json";
    QVERIFY2(contains(err, spec.string() + ": source: \"" + source.toStdString() + "\" resolves to "), err.c_str());
    QVERIFY2(contains(err, "outside the spec's folder " + fs::canonical(specDir()).string()), err.c_str());
    QVERIFY2(contains(err, "--allow-source-outside-spec") && contains(err, "KTUNE_ALLOW_SOURCE_OUTSIDE_SPEC=1"),
             err.c_str());
    // Nothing of the file it points at.
    QVERIFY2(!contains(err, kSecret) && !contains(err, "root:x"), err.c_str());
  }

  void sourceInsideTheSpecFolderLoads() {
    QCOMPARE(load("gemm.cu").source(), std::string("// the kernel\n"));
    QCOMPARE(load("./sub/k.cu").source(), std::string("// the kernel in a subfolder\n"));
    QCOMPARE(load("sub/../gemm.cu").source(), std::string("// the kernel\n"));
    QCOMPARE(load("sub/inner.cu").source(), std::string("// the kernel\n"));  // a symlink that stays inside
  }

  void aTrustedSpecMayReachOut() {
    qputenv(kAllowSourceOutsideSpecEnv, "1");
    const std::string text = load("../../secret.txt").source();
    qunsetenv(kAllowSourceOutsideSpecEnv);
    QVERIFY(text.find(kSecret) == 0);
    // Only "1" turns it on: a stray value is not consent.
    qputenv(kAllowSourceOutsideSpecEnv, "yes please");
    const std::string err = input_error_of([&] { load("link.cu"); });
    qunsetenv(kAllowSourceOutsideSpecEnv);
    QVERIFY2(contains(err, "outside the spec's folder"), err.c_str());
  }

  // Quoted includes of the spec's folder become the program's headers, with their own includes
  // (named from the folder, as NVRTC's named headers are); <...> and names no file of the folder
  // has are the compiler's.
  void headersComeFromTheSpecFolder() {
    const KernelSpec s = loadSource(
        "#include <cuda_fp16.h>\n  #  include \"util.cuh\"  // the helpers\n#include \"cuda_bf16.h\"\nint x;\n");
    const std::map<std::string, std::string> want{
        {"util.cuh", "// util\n#include \"sub/deep.cuh\"\n"},
        {"sub/deep.cuh", "// deep\n#include \"util.cuh\"\n#include \"toolkit_only.h\"\n"}};
    QCOMPARE(s.headers(), want);
    QCOMPARE(s.program().headers, want);
    QCOMPARE(s.program().file, std::string("k.cu"));
    QVERIFY(loadSource("// no includes\n").headers().empty());
  }

  // A built-in spec's headers are among the embedded files.
  void embeddedHeaders() {
    nlohmann::json j = read_json_file(kSpecDir / "gemm.json", "kernel spec");
    const std::map<std::string, std::string> files{
        {"gemm.cu", "#include \"ktune_device.cuh\"\n#include \"not_embedded.h\"\n"},
        {"ktune_device.cuh", "// shared\n"}};
    const KernelSpec s = KernelSpec::from_json(j, {}, cuda_spec_dialect(), "built-in gemm.json", &files);
    QCOMPARE(s.headers(), (std::map<std::string, std::string>{{"ktune_device.cuh", "// shared\n"}}));
  }

  void includeOutsideTheSpecFolderIsRefused_data() {
    QTest::addColumn<QString>("include");
    QTest::addColumn<QString>("includer");
    QTest::newRow("parent") << "../../secret.txt"
                            << "k.cu";
    QTest::newRow("absolute") << QString::fromStdString((root() / "secret.txt").string()) << "k.cu";
    QTest::newRow("symlink out") << "link.cuh"
                                 << "k.cu";
    QTest::newRow("from a header") << "../../secret.txt"
                                   << "util.cuh";
  }
  void includeOutsideTheSpecFolderIsRefused() {
    QFETCH(QString, include);
    QFETCH(QString, includer);
    const std::string line = "#include \"" + include.toStdString() + "\"\n";
    if (includer == "util.cuh") write_file(specDir() / "util.cuh", line);
    const std::string err = input_error_of([&] { loadSource(includer == "k.cu" ? line : "#include \"util.cuh\"\n"); });
    write_file(specDir() / "util.cuh", "// util\n#include \"sub/deep.cuh\"\n");
    // The spec, the file that includes it, the include as written, the folder, both ways out.
    const fs::path spec = specDir() / "spec.json";
    QVERIFY2(contains(err, spec.string() + ": source: " + includer.toStdString() + ": #include \"" +
                               include.toStdString() + "\" resolves to "),
             err.c_str());
    QVERIFY2(contains(err, "outside the spec's folder " + fs::canonical(specDir()).string()), err.c_str());
    QVERIFY2(contains(err, "--allow-source-outside-spec") && contains(err, "KTUNE_ALLOW_SOURCE_OUTSIDE_SPEC=1"),
             err.c_str());
    QVERIFY2(!contains(err, kSecret) && !contains(err, "root:x"), err.c_str());
  }

  void aTrustedSpecMayIncludeFromOutside() {
    qputenv(kAllowSourceOutsideSpecEnv, "1");
    const KernelSpec s = loadSource("#include \"../../secret.txt\"\n");
    qunsetenv(kAllowSourceOutsideSpecEnv);
    QVERIFY(s.headers().at("../../secret.txt").find(kSecret) == 0);
  }

  // A missing source names the spec and the file, not "outside" (it is inside, just absent).
  void aMissingSourceInsideIsNamed() {
    const std::string err = input_error_of([&] { load("missing.cu"); });
    QVERIFY2(contains(err, "source: cannot read kernel source") && contains(err, "missing.cu"), err.c_str());
    QVERIFY2(!contains(err, "outside"), err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSpecSource)
#include "test_spec_source.moc"
