// Every registry file shipped in tuned_data/ loads and looks up: a hand edit that breaks one
// fails here, not in serving code.
#include <QtTest>
#include <filesystem>

#include "ktune/registry.h"

using namespace ktune;
namespace fs = std::filesystem;

class TestShippedRegistry : public QObject {
  Q_OBJECT
 private slots:
  void everyShippedFileLoads() {
    int files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(KTUNE_SOURCE_DIR) / "tuned_data")) {
      if (entry.path().extension() != ".json") continue;
      ++files;
      const Registry reg = Registry::load(entry.path());
      const std::string where = entry.path().string();
      QVERIFY2(reg.size() > 0, where.c_str());
      QCOMPARE(Registry::file_for(fs::path(KTUNE_SOURCE_DIR) / "tuned_data", reg.backend(), reg.device()), entry.path());
      for (const auto& [family, keys] : reg.entries())
        for (const auto& [key, e] : keys) {
          QVERIFY2(!e.config.empty(), (where + " " + family + " " + key).c_str());
          QVERIFY2(e.latency_median_ns > 0, (where + " " + key).c_str());
          QVERIFY2(!e.samples_ns.empty(), (where + " " + key).c_str());
        }
    }
    QVERIFY2(files > 0, "tuned_data/ ships no registry file");
  }
};

QTEST_APPLESS_MAIN(TestShippedRegistry)
#include "test_shipped_registry.moc"
