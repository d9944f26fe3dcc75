// The registry as aiter's tuned GEMM configs: every file the export writes is read back through
// a re-implementation of aiter's own loader, which must find each tuned M's config as tuned;
// aiter's files (a fixture shaped like the ones aiter ships) are imported as unmeasured entries.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "ktune/error.h"
#include "ktune/registry_format_aiter.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct AiterPick {
  json config;
  bool tuned = false;
};

// aiter's get_gemm_config, as ROCm/aiter writes it: flat, aiter/ops/triton/utils/
// gemm_config_utils.py (bounds 4..8192); nested, utils/_config/gemm.py (bounds 1, 4..8192).
// The default file must exist; the (N, K) file replaces it when there is one; M_LEQ_b ascending,
// then M_GEQ_b descending, then "any" (never tuned); no match is aiter's KeyError.
AiterPick aiter_get_config(const fs::path& configs, AiterLayout layout, const std::string& arch,
                           const std::string& config_name, std::int64_t m, std::int64_t n, std::int64_t k) {
  static const std::vector<std::int64_t> flat_bounds{4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  static const std::vector<std::int64_t> nested_bounds{1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  const std::string nk = "-N=" + std::to_string(n) + "-K=" + std::to_string(k) + ".json";
  fs::path default_file, nk_file;
  if (layout == AiterLayout::Nested) {
    std::string dir = config_name;
    for (char& c : dir) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const fs::path d = configs / arch / "triton" / "gemm" / dir;
    default_file = d / "DEFAULT.json";
    nk_file = d / (config_name + nk);
  } else {
    default_file = configs / (arch + "-" + config_name + ".json");
    nk_file = configs / (arch + "-" + config_name + nk);
  }
  if (!fs::exists(default_file))
    throw std::runtime_error("Required config file doesn't exist: " + default_file.string());
  json dict = json::parse(std::ifstream(default_file));
  bool tuned = false;
  if (fs::exists(nk_file)) {
    dict = json::parse(std::ifstream(nk_file));
    tuned = true;
  }
  const auto& bounds = layout == AiterLayout::Nested ? nested_bounds : flat_bounds;
  for (const auto b : bounds)
    if (m <= b && dict.contains("M_LEQ_" + std::to_string(b))) return {dict["M_LEQ_" + std::to_string(b)], tuned};
  for (auto it = bounds.rbegin(); it != bounds.rend(); ++it)
    if (m >= *it && dict.contains("M_GEQ_" + std::to_string(*it))) return {dict["M_GEQ_" + std::to_string(*it)], tuned};
  if (dict.contains("any")) return {dict["any"], false};
  throw std::runtime_error("KeyError: no config for M=" + std::to_string(m));
}

// A family with aiter's Triton GEMM parameters (those its gfx942 A8W8_BLOCKSCALE files hold).
KernelFamily aiter_family() {
  KernelFamily f;
  f.name = "gemm_a8w8_blockscale";
  f.backend = "hip";
  f.key_fields = {{"M", true, "", {}, ""}, {"N", true, "", {}, ""}, {"K", true, "", {}, ""}};
  f.bucket_field = "M";
  std::vector<Parameter> params;
  for (const char* p : {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages",
                        "waves_per_eu", "matrix_instr_nonkdim"})
    params.push_back({p, {0, 1, 2, 4, 8, 16, 32, 64, 128}, ""});
  params.push_back({"cache_modifier", {"", ".cg", ".ca"}, ""});
  for (const char* p : {"NUM_KSPLIT", "kpack", "SPLITK_BLOCK_SIZE", "GROUP_K", "GROUP_N"})
    params.push_back({p, {1, 2, 4, 128, 1792, 3584, 7168}, ""});
  f.default_space = SearchSpace(std::move(params), {});
  return f;
}

// A config told apart by BLOCK_SIZE_M, NUM_KSPLIT and the cache modifier.
RegistryEntry entry(std::int64_t bm, std::int64_t ksplit = 1, const char* modifier = ".cg") {
  RegistryEntry e;
  e.config =
      Config({{"BLOCK_SIZE_M", bm}, {"BLOCK_SIZE_N", 128}, {"NUM_KSPLIT", ksplit}, {"cache_modifier", modifier}});
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

fs::path fixture() { return fs::path(KTUNE_SOURCE_DIR) / "tests/core/data/aiter/gemm"; }

// Tuned Ms across aiter's bounds: below the first, between two, past the last (M_GEQ_8192).
Registry tuned_registry(const std::string& slug) {
  Registry reg("hip", slug);
  const std::vector<std::pair<std::int64_t, std::int64_t>> ms{{1, 1},   {16, 2},   {64, 4},
                                                              {100, 1}, {4096, 2}, {16384, 4}};
  std::int64_t i = 0;
  for (const auto& [m, ksplit] : ms)
    reg.set("gemm_a8w8_blockscale", "M=" + std::to_string(m) + ",N=2112,K=7168",
            entry(i++ % 2 ? 32 : 64, ksplit, m == 64 ? "" : ".cg"));
  reg.set("gemm_a8w8_blockscale", "M=16,N=4096,K=1024", entry(128));
  return reg;
}

}  // namespace

class TestRegistryFormatAiter : public QObject {
  Q_OBJECT
 private slots:
  void bucketsAreAitersBounds() {
    QCOMPARE(aiter_bucket(1, AiterLayout::Flat), std::string("M_LEQ_4"));  // the flat loader has no M_LEQ_1
    QCOMPARE(aiter_bucket(1, AiterLayout::Nested), std::string("M_LEQ_1"));
    QCOMPARE(aiter_bucket(2, AiterLayout::Nested), std::string("M_LEQ_4"));
    QCOMPARE(aiter_bucket(100, AiterLayout::Flat), std::string("M_LEQ_128"));
    QCOMPARE(aiter_bucket(8192, AiterLayout::Flat), std::string("M_LEQ_8192"));
    QCOMPARE(aiter_bucket(8193, AiterLayout::Flat), std::string("M_GEQ_8192"));
    QCOMPARE(aiter_bucket(31, AiterLayout::Guide), std::string("small"));
    QCOMPARE(aiter_bucket(32, AiterLayout::Guide), std::string("medium_M32"));
    QCOMPARE(aiter_bucket(33, AiterLayout::Guide), std::string("medium_M64"));
    QCOMPARE(aiter_bucket(257, AiterLayout::Guide), std::string("xlarge"));
  }

  void archOfDevice() {
    QCOMPARE(aiter_arch("amd-instinct-mi300x"), std::string("gfx942"));
    QCOMPARE(aiter_arch("amd-instinct-mi355x"), std::string("gfx950"));
    QCOMPARE(aiter_arch("amd-instinct-mi250x-mi250"), std::string("gfx90a"));
    QCOMPARE(aiter_arch("gfx942"), std::string("gfx942"));
    QCOMPARE(aiter_arch("nvidia-h100-80gb-hbm3"), std::string(""));
    QCOMPARE(aiter_arch("amd-epyc-9654-96-core-processor"), std::string(""));
    QCOMPARE(aiter_layout_from_string("nested"), AiterLayout::Nested);
    QVERIFY(contains(error_of([] { aiter_layout_from_string("deep"); }), "flat, nested or guide"));
  }

  void exportReadsAsTuned_flat() { check_export_reads_as_tuned(AiterLayout::Flat); }
  void exportReadsAsTuned_nested() { check_export_reads_as_tuned(AiterLayout::Nested); }

  void guideLayoutFallsBackToAnyInAitersLoader() {
    // What the seed guide describes (and ktune wrote before): aiter reads only `any` of it.
    const Registry reg = tuned_registry("amd-instinct-mi300x");
    QTemporaryDir dir;
    const fs::path out = dir.path().toStdString();
    export_aiter(reg, aiter_family(), out, {AiterLayout::Guide, "gfx942"});
    const json small = json::parse(std::ifstream(out / "gfx942-GEMM-A8W8_BLOCKSCALE-N=2112-K=7168.json"));
    QVERIFY(small.contains("small") && small.contains("xlarge") && small.contains("any"));
    for (const std::int64_t m : {1, 16, 64, 100}) {
      const AiterPick p = aiter_get_config(out, AiterLayout::Flat, "gfx942", "GEMM-A8W8_BLOCKSCALE", m, 2112, 7168);
      QVERIFY(!p.tuned);
      QCOMPARE(p.config, small["any"]);
    }
  }

  void guideLayoutKeepsTheDeviceSlug() {
    Registry reg("cuda", "nvidia-h100-80gb-hbm3");
    reg.set("gemm_a8w8_blockscale", "M=1,N=1024,K=1024", entry(16, 1, ""));
    reg.set("gemm_a8w8_blockscale", "M=16,N=1024,K=1024", entry(32));  // the largest M of "small" wins
    reg.set("gemm_a8w8_blockscale", "M=4096,N=1024,K=1024", entry(128));
    const AiterExport e = aiter_files(reg, aiter_family(), {AiterLayout::Guide, ""});
    QCOMPARE(e.files.size(), std::size_t(2));
    QCOMPARE(e.files[0].name, std::string("nvidia-h100-80gb-hbm3-GEMM-A8W8_BLOCKSCALE-N=1024-K=1024.json"));
    QCOMPARE(e.files[0].json["small"]["BLOCK_SIZE_M"], nlohmann::ordered_json(32));
    QCOMPARE(e.files[0].json["xlarge"]["BLOCK_SIZE_M"], nlohmann::ordered_json(128));
    QCOMPARE(e.files[1].name, std::string("nvidia-h100-80gb-hbm3-GEMM-A8W8_BLOCKSCALE.json"));
    QCOMPARE(e.notes.size(), std::size_t(1));
    QVERIFY2(contains(e.notes[0], "M=1 and M=16 share small"), e.notes[0].c_str());
  }

  void exportErrors() {
    const KernelFamily f = aiter_family();
    QVERIFY(contains(error_of([&] { aiter_files(Registry("hip", "gfx942"), f); }), "no gemm_a8w8_blockscale entries"));
    KernelFamily flat = f;
    flat.bucket_field.clear();
    QVERIFY(contains(error_of([&] { aiter_files(Registry("hip", "gfx942"), flat); }), "no bucket field"));
    // A device whose architecture ktune does not know: --arch names it.
    Registry h100("cuda", "nvidia-h100-80gb-hbm3");
    h100.set(f.name, "M=16,N=1024,K=1024", entry(16));
    const std::string e = error_of([&] { aiter_files(h100, f); });
    QVERIFY2(contains(e, "device 'nvidia-h100-80gb-hbm3'") && contains(e, "--arch"), e.c_str());
    QCOMPARE(aiter_files(h100, f, {AiterLayout::Flat, "gfx942"}).files.front().name,
             std::string("gfx942-GEMM-A8W8_BLOCKSCALE-N=1024-K=1024.json"));
    QVERIFY(contains(error_of([&] { aiter_files(h100, f, {AiterLayout::Flat, "../x"}); }), "not a file name"));
    Registry bad("hip", "gfx942");
    RegistryEntry b = entry(16);
    b.config.set("block_size_1", 2);
    bad.set(f.name, "M=16,N=1024,K=1024", b);
    const std::string u = error_of([&] { aiter_files(bad, f); });
    QVERIFY2(contains(u, "unknown parameter 'block_size_1'") && contains(u, "M=16,N=1024,K=1024"), u.c_str());
  }

  void importReadsAitersFilesUnmeasured() {
    const KernelFamily f = aiter_family();
    const std::string two = error_of([&] { read_aiter(fixture(), f, ""); });
    QVERIFY2(contains(two, "gfx942, gfx950: name one with --arch"), two.c_str());
    const AiterImport in = read_aiter(fixture(), f, "gfx942");
    QCOMPARE(in.arch, std::string("gfx942"));
    QCOMPARE(in.files_read.size(), std::size_t(2));  // the (N, K) file and the default
    QCOMPARE(in.other_files, std::size_t(1));        // A16W16's
    std::map<std::string, RegistryEntry> by_key(in.entries.begin(), in.entries.end());
    QCOMPARE(by_key.size(), std::size_t(5));  // M_LEQ_4, 16, 64, 256 and M_GEQ_4096
    for (const char* key : {"M=4,N=2112,K=7168", "M=16,N=2112,K=7168", "M=64,N=2112,K=7168", "M=256,N=2112,K=7168",
                            "M=4096,N=2112,K=7168"})
      QVERIFY2(by_key.count(key), key);
    const RegistryEntry& e = by_key["M=4,N=2112,K=7168"];
    QCOMPARE(e.config.value("cache_modifier"), ParamValue(""));  // aiter's null
    QCOMPARE(e.config.get("NUM_KSPLIT"), std::int64_t(4));
    QCOMPARE(e.config.get("SPLITK_BLOCK_SIZE"), std::int64_t(1792));
    QCOMPARE(by_key["M=256,N=2112,K=7168"].config.value("cache_modifier"), ParamValue(".ca"));
    for (const auto& [key, x] : in.entries) {
      QCOMPARE(x.latency_median_ns, 0.0);  // no latency invented
      QVERIFY(x.samples_ns.empty());
      QCOMPARE(x.imported_from.substr(0, 6), std::string("aiter "));
    }
    std::string notes;
    for (const auto& n : in.notes) notes += n + "\n";
    QVERIFY2(contains(notes, "gfx942-GEMM-A8W8_BLOCKSCALE.json not imported: aiter's default file"), notes.c_str());
    QVERIFY2(contains(notes, "any not imported"), notes.c_str());

    // Imported and exported again, aiter's loader picks the same config at every bucket bound.
    Registry reg("hip", "amd-instinct-mi300x");
    for (const auto& [key, x] : in.entries) reg.set(f.name, key, x);
    QTemporaryDir dir;
    const fs::path out = dir.path().toStdString();
    export_aiter(reg, f, out);
    for (const std::int64_t m : {1, 4, 5, 16, 64, 256, 4096, 9000}) {
      const AiterPick a =
          aiter_get_config(fixture(), AiterLayout::Flat, "gfx942", "GEMM-A8W8_BLOCKSCALE", m, 2112, 7168);
      const AiterPick b = aiter_get_config(out, AiterLayout::Flat, "gfx942", "GEMM-A8W8_BLOCKSCALE", m, 2112, 7168);
      json want = a.config;
      want["cache_modifier"] = want["cache_modifier"].is_null() ? json("") : want["cache_modifier"];
      QVERIFY2(b.config == want, ("M=" + std::to_string(m)).c_str());
    }
  }

  void importReadsTheNestedLayout() {
    const Registry reg = tuned_registry("amd-instinct-mi300x");
    QTemporaryDir dir;
    const fs::path out = dir.path().toStdString();
    export_aiter(reg, aiter_family(), out, {AiterLayout::Nested, ""});
    const AiterImport in = read_aiter(out, aiter_family(), "");
    QCOMPARE(in.arch, std::string("gfx942"));
    std::map<std::string, RegistryEntry> by_key(in.entries.begin(), in.entries.end());
    // M=100 comes back as its bucket's bound; M=16384 (M_GEQ_8192) as M=8192.
    for (const char* key : {"M=1,N=2112,K=7168", "M=128,N=2112,K=7168", "M=8192,N=2112,K=7168", "M=16,N=4096,K=1024"})
      QVERIFY2(by_key.count(key), key);
    QVERIFY(by_key["M=128,N=2112,K=7168"].config.same_values(
        reg.find("gemm_a8w8_blockscale", "M=100,N=2112,K=7168")->config));
  }

  void importErrorsNameFileBucketAndParameter_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("needle");
    QTest::newRow("nested object") << R"({"M_LEQ_16": {"BLOCK_SIZE_M": 16, "packed": {"K_PACK": 4}}})"
                                   << "M_LEQ_16: packed holds an object";
    QTest::newRow("float") << R"({"M_LEQ_16": {"BLOCK_SIZE_M": 16.5}})"
                           << "M_LEQ_16: BLOCK_SIZE_M=16.5 is not an integer";
    QTest::newRow("unknown parameter") << R"({"M_LEQ_16": {"BLOCK_SIZE_M": 16, "N_FIRST": false}})"
                                       << "M_LEQ_16: config has unknown parameter 'N_FIRST'";
    QTest::newRow("wrong kind") << R"({"M_GEQ_4096": {"BLOCK_SIZE_M": "x"}})"
                                << "M_GEQ_4096: config: BLOCK_SIZE_M=x is a string";
    QTest::newRow("number as text") << R"({"M_LEQ_8": {"BLOCK_SIZE_M": "16"}})"
                                    << "M_LEQ_8: config parameter 'BLOCK_SIZE_M'";
    QTest::newRow("not an object") << R"([1])"
                                   << "expected an object of M buckets";
  }
  void importErrorsNameFileBucketAndParameter() {
    QFETCH(QString, text);
    QFETCH(QString, needle);
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "gfx942-GEMM-A8W8_BLOCKSCALE-N=64-K=128.json";
    std::ofstream(file) << text.toStdString();
    const std::string e = error_of([&] { read_aiter(file, aiter_family(), ""); });
    QVERIFY2(contains(e, needle.toStdString()) && contains(e, "N=64-K=128.json"), e.c_str());
  }

  void importRefusesWhatItCannotRead() {
    QTemporaryDir dir;
    const fs::path d = dir.path().toStdString();
    std::ofstream(d / "gfx942-GEMM-A16W16-N=64-K=128.json") << R"({"any": {}})";
    const std::string none = error_of([&] { read_aiter(d, aiter_family(), ""); });
    QVERIFY2(contains(none, "holds no aiter files of GEMM-A8W8_BLOCKSCALE"), none.c_str());
    const std::string other = error_of([&] { read_aiter(fixture(), aiter_family(), "gfx1201"); });
    QVERIFY2(contains(other, "no GEMM-A8W8_BLOCKSCALE files of gfx1201 (it has gfx942, gfx950)"), other.c_str());
    KernelFamily no_k = aiter_family();
    no_k.key_fields.pop_back();
    QVERIFY(contains(error_of([&] { read_aiter(fixture(), no_k, "gfx942"); }), "no key field 'K'"));
    // The guide's keys in a file: aiter's loader reads only `any` of them, and so does import.
    std::ofstream(d / "gfx942-GEMM-A8W8_BLOCKSCALE-N=64-K=128.json")
        << R"({"small": {}, "M_LEQ_8": {"NUM_KSPLIT": 2}})";
    const AiterImport in = read_aiter(d, aiter_family(), "");
    QCOMPARE(in.entries.size(), std::size_t(1));
    QVERIFY2(contains(in.notes.front(), "small not imported: aiter's loader reads only"), in.notes.front().c_str());
  }

 private:
  void check_export_reads_as_tuned(AiterLayout layout) {
    const Registry reg = tuned_registry("amd-instinct-mi300x");
    QTemporaryDir dir;
    const fs::path out = dir.path().toStdString();
    std::vector<std::string> notes;
    const auto written = export_aiter(reg, aiter_family(), out, {layout, ""}, &notes);
    QCOMPARE(written.size(), std::size_t(3));  // two (N, K) files and the default
    QVERIFY(notes.empty());
    for (const auto& [key, e] : reg.entries().at("gemm_a8w8_blockscale")) {
      const Problem p = Problem::from_key("gemm_a8w8_blockscale", key);
      const AiterPick pick =
          aiter_get_config(out, layout, "gfx942", "GEMM-A8W8_BLOCKSCALE", p.num("M"), p.num("N"), p.num("K"));
      QVERIFY2(pick.tuned, key.c_str());
      QVERIFY2(pick.config == e.config.to_json(), (key + ": " + pick.config.dump()).c_str());
    }
    // Between tuned Ms aiter rounds M up, as ktune's lookup does; past the largest, `any`.
    const auto pick = [&](std::int64_t m) {
      return aiter_get_config(out, layout, "gfx942", "GEMM-A8W8_BLOCKSCALE", m, 2112, 7168);
    };
    QCOMPARE(pick(2000).config, reg.find("gemm_a8w8_blockscale", "M=4096,N=2112,K=7168")->config.to_json());
    QCOMPARE(pick(9000).config, reg.find("gemm_a8w8_blockscale", "M=16384,N=2112,K=7168")->config.to_json());
    // A shape without its own file reads the default file, untuned.
    const AiterPick other = aiter_get_config(out, layout, "gfx942", "GEMM-A8W8_BLOCKSCALE", 16, 512, 512);
    QVERIFY(!other.tuned);
  }
};

QTEST_APPLESS_MAIN(TestRegistryFormatAiter)
#include "test_registry_format_aiter.moc"
