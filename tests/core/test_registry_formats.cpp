// The registry in the seed tools' formats: aiter's per-(N, K) files of M buckets and its default
// file, and tpu-tune's "key_params" entries read back in, with the errors a user sees.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <map>

#include "ktune/error.h"
#include "ktune/registry_formats.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

KernelFamily gemm_family() {
  KernelFamily f;
  f.name = "gemm";
  f.backend = "cuda";
  f.key_fields = {{"M", true, "", {}, ""},
                  {"N", true, "", {}, ""},
                  {"K", true, "", {}, ""},
                  {"dtype", false, "f16", {"f16", "bf16"}, ""}};
  f.bucket_field = "M";
  f.default_config = Config({{"BM", 64}, {"BN", 64}, {"cache_modifier", ""}});
  f.default_space =
      SearchSpace({{"BM", {16, 32, 64, 128}, ""}, {"BN", {64, 128}, ""}, {"cache_modifier", {"", ".cg"}, ""}}, {});
  return f;
}

RegistryEntry entry(std::int64_t bm, const char* modifier = ".cg") {
  RegistryEntry e;
  e.config = Config({{"BN", 64}, {"BM", bm}, {"cache_modifier", modifier}});
  e.latency_avg_ns = e.latency_median_ns = 1000;
  e.benchmarking_method = "amortized";
  return e;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

class TestRegistryFormats : public QObject {
  Q_OBJECT
 private slots:
  void bucketsAreAitersOwn() {
    QCOMPARE(aiter_bucket(1), std::string("small"));
    QCOMPARE(aiter_bucket(31), std::string("small"));
    QCOMPARE(aiter_bucket(32), std::string("medium_M32"));
    QCOMPARE(aiter_bucket(33), std::string("medium_M64"));
    QCOMPARE(aiter_bucket(128), std::string("medium_M128"));
    QCOMPARE(aiter_bucket(256), std::string("large"));
    QCOMPARE(aiter_bucket(257), std::string("xlarge"));
  }

  void exportWritesOneFilePerNKAndTheDefault() {
    Registry reg("cuda", "gfx942");
    reg.set("gemm", "M=1,N=1024,K=1024,dtype=f16", entry(16, ""));
    reg.set("gemm", "M=16,N=1024,K=1024,dtype=f16", entry(32));  // the largest M of "small" wins
    reg.set("gemm", "M=64,N=1024,K=1024,dtype=f16", entry(64));
    reg.set("gemm", "M=4096,N=1024,K=1024,dtype=f16", entry(128));
    reg.set("gemm", "M=16,N=4096,K=1024,dtype=f16", entry(32));
    QTemporaryDir dir;
    const fs::path out = fs::path(dir.path().toStdString()) / "configs";
    const auto written = export_aiter(reg, gemm_family(), out);
    QCOMPARE(written.size(), std::size_t(3));
    const json a = json::parse(std::ifstream(out / "gfx942-GEMM-GEMM-N=1024-K=1024.json"));
    QCOMPARE(a["small"]["BM"], json(32));
    QCOMPARE(a["small"]["cache_modifier"], json(".cg"));
    QCOMPARE(a["medium_M64"]["BM"], json(64));
    QCOMPARE(a["xlarge"]["BM"], json(128));
    QCOMPARE(a["any"]["BM"], json(128));
    QVERIFY(!a.contains("medium_M32") && !a.contains("large"));
    // Parameters in the space's order, as aiter lists them.
    QCOMPARE(a["small"].begin().key(), std::string("BM"));
    const json d = json::parse(std::ifstream(out / "gfx942-GEMM-GEMM.json"));
    QCOMPARE(d["small"]["BM"], json(32));  // both (N, K) chose BM=32 for small
    QCOMPARE(d["any"]["BM"], json(32));    // 2 of the 5 entries
    QVERIFY(fs::exists(out / "gfx942-GEMM-GEMM-N=4096-K=1024.json"));

    // A text field that differs between entries names the files.
    reg.set("gemm", "M=16,N=4096,K=1024,dtype=bf16", entry(16));
    const auto files = aiter_files(reg, gemm_family());
    QVERIFY(std::any_of(files.begin(), files.end(),
                        [](const AiterFile& f) { return f.name == "gfx942-GEMM-GEMM-N=4096-K=1024-dtype=bf16.json"; }));
  }

  void exportErrors() {
    const std::string e = error_of([] { aiter_files(Registry("cuda", "gfx942"), gemm_family()); });
    QVERIFY2(contains(e, "no gemm entries"), e.c_str());
    KernelFamily flat = gemm_family();
    flat.bucket_field.clear();
    QVERIFY2(contains(error_of([&] { aiter_files(Registry("cuda", "x"), flat); }), "no bucket field"), "");
    Registry reg("cuda", "gfx942");
    RegistryEntry bad = entry(16);
    bad.config.set("waves_per_eu", 2);
    reg.set("gemm", "M=16,N=1024,K=1024,dtype=f16", bad);
    const std::string u = error_of([&] { aiter_files(reg, gemm_family()); });
    QVERIFY2(contains(u, "unknown parameter 'waves_per_eu'") && contains(u, "M=16,N=1024,K=1024,dtype=f16"), u.c_str());
  }

  void importTpuTuneEntries() {
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "tpu_v6e.json";
    std::ofstream(file) << R"J({
      "16,2048,4096": {"config": {"BM": 16, "BN": 128, "cache_modifier": ".cg"},
                       "stats": {"latency_avg_ns": 4500.0, "latency_std_ns": 120.0, "compile_time_s": 0.5},
                       "metadata": {"benchmarking_method": "xprof", "samples_ns": [4600.0, 4400.0, 4300.0]}},
      "(32, 2048, 4096)": {"config": {"BM": 32, "BN": 64, "cache_modifier": ""},
                           "stats": {"latency_avg_ns": 5000.0}}})J";
    const TpuTuneEntries in = read_tpu_tune(file, gemm_family(), {"M", "N", "K"});
    QCOMPARE(in.entries.size(), std::size_t(2));
    QCOMPARE(in.median_from_samples, std::size_t(1));
    QCOMPARE(in.median_from_average, std::size_t(1));
    std::map<std::string, RegistryEntry> by_key(in.entries.begin(), in.entries.end());
    QVERIFY(by_key.count("M=16,N=2048,K=4096,dtype=f16"));  // dtype: the family default
    const RegistryEntry& e0 = by_key["M=16,N=2048,K=4096,dtype=f16"];
    QCOMPARE(e0.latency_median_ns, 4400.0);  // median of the samples
    QCOMPARE(e0.benchmarking_method, std::string("xprof"));
    QCOMPARE(e0.imported_from, std::string("tpu-tune tpu_v6e.json"));
    QCOMPARE(e0.config.value("cache_modifier"), ParamValue(".cg"));
    const RegistryEntry& e1 = by_key["M=32,N=2048,K=4096,dtype=f16"];
    QCOMPARE(e1.latency_median_ns, 5000.0);  // no samples: the average
    QCOMPARE(e1.benchmarking_method, std::string("amortized"));
  }

  void importErrorsNameFileKeyAndField_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("fields");
    QTest::addColumn<QString>("needle");
    const QString ok = R"J("stats": {"latency_avg_ns": 10})J";
    QTest::newRow("unknown parameter") << R"J({"16,1,1": {"config": {"BM": 16, "block_size_1": 8}, )J" + ok + "}}"
                                       << "M,N,K"
                                       << "\"16,1,1\": config has unknown parameter 'block_size_1'";
    QTest::newRow("wrong kind") << R"J({"16,1,1": {"config": {"BM": "x"}, )J" + ok + "}}"
                                << "M,N,K"
                                << "BM=x is a string";
    QTest::newRow("key length") << R"J({"16,1": {"config": {"BM": 16}, )J" + ok + "}}"
                                << "M,N,K"
                                << "\"16,1\": key \"16,1\" has 2 values, but --key-fields names 3";
    QTest::newRow("key value") << R"J({"16,x,1": {"config": {"BM": 16}, )J" + ok + "}}"
                               << "M,N,K"
                               << "N=x must be a positive integer";
    QTest::newRow("unknown field") << R"J({"16,1,1": {"config": {"BM": 16}, )J" + ok + "}}"
                                   << "M,N,Q"
                                   << "no key field 'Q'";
    QTest::newRow("no average") << R"J({"16,1,1": {"config": {"BM": 16}, "stats": {}}})J"
                                << "M,N,K"
                                << "stats: missing field \"latency_avg_ns\"";
    QTest::newRow("bad average") << R"J({"16,1,1": {"config": {"BM": 16}, "stats": {"latency_avg_ns": 0}}})J"
                                 << "M,N,K"
                                 << "latency_avg_ns";
    QTest::newRow("not an entry") << R"J({"16,1,1": [1]})J"
                                  << "M,N,K"
                                  << "expected an entry";
    QTest::newRow("not an object") << "[1]"
                                   << "M,N,K"
                                   << "expected an object of \"key_params\"";
    QTest::newRow("twice") << R"J({"16,1,1": {"config": {"BM": 16}, )J" + ok +
                                  R"J(}, "(16,1,1)": {"config": {"BM": 16}, )J" + ok + "}}"
                           << "M,N,K"
                           << "a second time";
  }
  void importErrorsNameFileKeyAndField() {
    QFETCH(QString, text);
    QFETCH(QString, fields);
    QFETCH(QString, needle);
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "bad.json";
    std::ofstream(file) << text.toStdString();
    std::vector<std::string> names;
    for (const auto& f : fields.split(',')) names.push_back(f.toStdString());
    const std::string e = error_of([&] { read_tpu_tune(file, gemm_family(), names); });
    QVERIFY2(contains(e, needle.toStdString()), e.c_str());
    QVERIFY2(contains(e, "bad.json") || needle.contains("key field"), e.c_str());
  }
};

QTEST_APPLESS_MAIN(TestRegistryFormats)
#include "test_registry_formats.moc"
