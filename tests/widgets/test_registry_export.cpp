// File → Export → "Registry as aiter files…": the workbench writes a family's registry entries
// as aiter's files through the same core function as `ktune registry export --format aiter`,
// and says what to do when there is nothing to export.
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/registry_export.h"

using namespace ktune;
using namespace ktune::gui;
namespace fs = std::filesystem;

namespace {

KernelFamily cpuFamily(const std::string& name) {
  for (const auto& backend : make_backends())
    if (backend->name() == "cpu")
      for (const KernelFamily& f : backend->families())
        if (f.name == name) return f;
  throw std::runtime_error("no cpu " + name + " family");
}

RegistryEntry entry(const Config& config) {
  RegistryEntry e;
  e.config = config;
  e.latency_avg_ns = e.latency_median_ns = 1000;
  e.benchmarking_method = "amortized";
  return e;
}

QString errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return QString::fromUtf8(e.what());
  }
  return QStringLiteral("(no error)");
}

}  // namespace

class TestRegistryExport : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { initialize(); }

  void writesAitersFiles() {
    const KernelFamily gemm = cpuFamily("gemm");
    QTemporaryDir dir;
    const fs::path registryFile =
        Registry::file_for(sstr(dir.filePath(QStringLiteral("tuned_data"))), "cpu", "test-cpu");
    Registry reg("cpu", "test-cpu");
    reg.set("gemm", "M=16,N=256,K=256,dtype=f32", entry(gemm.default_config));
    reg.set("gemm", "M=512,N=256,K=256,dtype=f32", entry(gemm.default_config));
    reg.save(registryFile);

    const QString out = dir.filePath(QStringLiteral("aiter"));
    const QStringList files = exportRegistryAsAiter(registryFile, gemm, out);
    QCOMPARE(files.size(), 2);  // the (N, K) file and the default file
    for (const QString& f : files) QVERIFY2(QFileInfo::exists(f), qPrintable(f));
    const fs::path nk = fs::path(sstr(out)) / "test-cpu-GEMM-GEMM-N=256-K=256.json";
    QVERIFY(files.contains(qstr(nk.string())));
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(nk));
    QCOMPARE(j["M_LEQ_16"], gemm.default_config.to_json());  // aiter's buckets, named by the slug
    QCOMPARE(j["M_LEQ_512"], gemm.default_config.to_json());
    QVERIFY(!j.contains("M_LEQ_64"));
    QVERIFY(fs::exists(fs::path(sstr(out)) / "test-cpu-GEMM-GEMM.json"));
  }

  void saysWhatToDoWhenThereIsNothingToExport() {
    const KernelFamily gemm = cpuFamily("gemm");
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("aiter"));
    const fs::path missing = fs::path(sstr(dir.path())) / "tuned_data" / "cpu" / "nowhere.json";
    const QString e = errorOf([&] { exportRegistryAsAiter(missing, gemm, out); });
    QVERIFY2(e.contains(QStringLiteral("no registry file")) && e.contains(QStringLiteral("nowhere.json")),
             qPrintable(e));
    QVERIFY(!QFileInfo::exists(out));

    // A registry without entries of the family names the family.
    const fs::path registryFile = Registry::file_for(sstr(dir.path()), "cpu", "test-cpu");
    Registry reg("cpu", "test-cpu");
    reg.set("gemm", "M=16,N=256,K=256,dtype=f32", entry(gemm.default_config));
    reg.save(registryFile);
    KernelFamily other = gemm;
    other.name = "gemm_other";
    const QString none = errorOf([&] { exportRegistryAsAiter(registryFile, other, out); });
    QVERIFY2(none.contains(QStringLiteral("no gemm_other entries")), qPrintable(none));
  }
};

QTEST_MAIN(TestRegistryExport)
#include "test_registry_export.moc"
