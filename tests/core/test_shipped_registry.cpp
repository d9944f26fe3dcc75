// Every registry file shipped in tuned_data/ loads and looks up: a hand edit that breaks one
// fails here, not in serving code.
#include <QtTest>
#include <filesystem>

#include "ktune/backends/cuda_spec.h"
#include "ktune/kernel_spec.h"
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
      QCOMPARE(Registry::file_for(fs::path(KTUNE_SOURCE_DIR) / "tuned_data", reg.backend(), reg.device()),
               entry.path());
      for (const auto& [family, keys] : reg.entries())
        for (const auto& [key, e] : keys) {
          QVERIFY2(!e.config.empty(), (where + " " + family + " " + key).c_str());
          QVERIFY2(e.latency_median_ns > 0, (where + " " + key).c_str());
          QVERIFY2(!e.samples_ns.empty(), (where + " " + key).c_str());
        }
    }
    QVERIFY2(files > 0, "tuned_data/ ships no registry file");
  }

  // A shape the shipped H100 registry lacks falls back to a config the gemm family's own Hopper
  // constraints allow there (it used to be the WGMMA=0 default, which they prune), and every
  // shipped entry fits the family's space.
  void h100MissFallsBackToAConfigHopperAllows() {
    const fs::path root = fs::path(KTUNE_SOURCE_DIR);
    const KernelFamily gemm = KernelSpec::load(root / "resources/kernels/cuda/gemm.json", cuda_spec_dialect()).family();
    const Registry reg = Registry::load(root / "tuned_data/cuda/nvidia-h100-80gb-hbm3.json");
    reg.check(gemm);
    LookupContext h100;  // what the CUDA backend reports for an H100 (the constraints read these)
    h100.device = {{"cc_major", 9},
                   {"cc_minor", 0},
                   {"smem_per_block_optin", 232448},
                   {"smem_per_block", 49152},
                   {"max_threads_per_block", 1024},
                   {"regs_per_block", 65536},
                   {"warp_size", 32},
                   {"sms", 132},
                   {"l2_bytes", 52428800}};
    for (const char* key :
         {"M=64,N=8192,K=4096,dtype=f16", "M=16,N=11008,K=4096,dtype=f16", "M=512,N=2048,K=8192,dtype=f16"}) {
      const Problem p = Problem::from_key("gemm", key);
      const LookupResult r = reg.lookup(gemm, p, h100);
      QCOMPARE(int(r.source), int(LookupSource::Default));
      Variables vars = h100.device;
      for (const auto& [k, v] : gemm.variables(p)) vars[k] = v;
      const auto why = gemm.default_space.violated(r.config, vars);
      QVERIFY2(!why, (std::string(key) + " -> " + r.config.key() + ": " + why.value_or("")).c_str());
      QCOMPARE(r.config.get("WGMMA"), std::int64_t(1));
      QVERIFY2(r.warning.find(key) != std::string::npos &&
                   r.warning.find("ktune tune gemm --backend cuda") != std::string::npos,
               r.warning.c_str());
    }
  }
};

QTEST_APPLESS_MAIN(TestShippedRegistry)
#include "test_shipped_registry.moc"
