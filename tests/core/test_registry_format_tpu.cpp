// tpu-inference's tuned_data files, shaped as its repository holds them (quantized_matmul/*.json
// flat, with and without stats, and as bare lists; ragged_paged_attention/v3/*.json nested four
// levels, config objects and lists side by side), read into the registry and written back.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <map>

#include "ktune/error.h"
#include "ktune/registry_format_tpu.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// tpu-inference's quantized matmul under ktune's qmatmul key names; x_dtype spelled ktune's way
// (fp8_e4m3), w_dtype jax's (float8_e4m3fn), as families may.
KernelFamily matmul_family() {
  KernelFamily f;
  f.name = "qmatmul";
  f.backend = "worker";
  f.key_fields = {{"batch", true, "", {}, ""},
                  {"out", true, "", {}, ""},
                  {"in", true, "", {}, ""},
                  {"x_dtype", false, "int8", {"int8", "fp8_e4m3"}, ""},
                  {"w_dtype", false, "int8", {"int8", "float8_e4m3fn", "float4_e2m1fn"}, ""}};
  f.bucket_field = "batch";
  f.default_space = SearchSpace({{"batch_block_size", {16, 128, 256, 512, 1024}, ""},
                                 {"out_block_size", {256, 1024, 1280, 2560}, ""},
                                 {"in_block_size", {1024, 1280, 2048, 4096}, ""},
                                 {"n_lane_multiplier", {1, 2, 4}, ""}},
                                {});
  return f;
}

// ktune's paged_attention key, with the Pallas kernel's parameters.
KernelFamily attention_family(bool windows = false) {
  KernelFamily f;
  f.name = "paged_attention";
  f.backend = "worker";
  f.key_fields = {{"num_sequences", true, "", {}, ""},
                  {"num_q_heads", true, "", {}, ""},
                  {"num_kv_heads", true, "", {}, ""},
                  {"head_dim", true, "", {}, ""},
                  {"page_size", true, "", {}, ""},
                  {"max_model_len", true, "", {}, ""},
                  {"dtype", false, "bf16", {"bf16", "f32"}, ""}};
  if (windows) f.key_fields.push_back({"sliding_window", true, "0", {}, "0: none"});
  f.bucket_field = "num_sequences";
  f.default_space =
      SearchSpace({{"num_kv_pages_per_block", {1, 2, 4, 8, 16}, ""}, {"num_q_per_block", {8, 16, 32, 64}, ""}}, {});
  return f;
}

fs::path write(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
  const fs::path file = fs::path(dir.path().toStdString()) / name;
  std::ofstream(file) << text;
  return file;
}

std::map<std::string, RegistryEntry> by_key(const TpuImport& in) { return {in.entries.begin(), in.entries.end()}; }

// As quantized_matmul/tpu_v6e.json: most entries without stats ({} or none), a few measured.
const char* kFlat = R"J({
  "1024,1280,4096,int8,int8": {"config": {"batch_block_size": 1024, "out_block_size": 1280, "in_block_size": 4096}},
  "128,2560,5120,int8,int8": {
    "config": {"batch_block_size": 128, "in_block_size": 1280, "out_block_size": 2560},
    "stats": {"compile_time_s": 0.728, "latency_avg_ns": 160560.0, "latency_std_ns": 0.0, "lower_time_s": 0.02}},
  "16,2560,5120,float8_e4m3fn,float8_e4m3fn": {
    "config": {"batch_block_size": 16, "out_block_size": 1280, "in_block_size": 1024},
    "metadata": {"schema_version": "1.0"}, "stats": {}}})J";

// As ragged_paged_attention/v3/tpu_v7.json: config objects beside bare lists, and sliding windows.
const char* kNested = R"J({"128": {"q_bfloat16_kv_bfloat16": {
  "q_head-16_kv_head-2_head-128": {
    "max_model_len-1024-sw-None": [8, 32],
    "max_model_len-2048-sw-None": {"config": {"num_kv_pages_per_block": 16, "num_q_per_block": 32},
                                   "metadata": {"schema_version": "1.0"}, "stats": {}}},
  "q_head-16_kv_head-2_head-64": {
    "max_model_len-1024-sw-128": {"config": {"num_kv_pages_per_block": 2, "num_q_per_block": 64}},
    "max_model_len-1024-sw-None": {"config": {"num_kv_pages_per_block": 8, "num_q_per_block": 32}}}}}})J";

RegistryEntry measured(Config c, double ns) {
  RegistryEntry e;
  e.config = std::move(c);
  e.latency_avg_ns = ns;
  e.latency_median_ns = ns;
  e.latency_std_ns = 3;
  e.compile_time_s = 0.5;
  e.benchmarking_method = "amortized";
  e.samples_ns = {ns - 1, ns, ns + 1};
  return e;
}

}  // namespace

class TestRegistryFormatTpu : public QObject {
  Q_OBJECT
 private slots:
  void flatEntriesWithAndWithoutStats() {
    QTemporaryDir dir;
    const TpuImport in = read_tpu_inference(write(dir, "tpu_v6e.json", kFlat), matmul_family(), {});
    QCOMPARE(in.layout, TpuLayout::Flat);
    QCOMPARE(in.entries.size(), std::size_t(3));
    QCOMPARE(in.unmeasured, std::size_t(2));  // "stats": {} and no stats at all
    QCOMPARE(in.median_from_average, std::size_t(1));
    auto e = by_key(in);
    // float8_e4m3fn is one value: ktune's fp8_e4m3 where the field's choices say so, else kept.
    const std::string fp8 = "batch=16,out=2560,in=5120,x_dtype=fp8_e4m3,w_dtype=float8_e4m3fn";
    QVERIFY(e.count(fp8));
    QVERIFY(!e[fp8].measured());
    QCOMPARE(e[fp8].latency_avg_ns, 0.0);  // no latency is invented
    QVERIFY(e[fp8].samples_ns.empty());
    QCOMPARE(e[fp8].config.get("out_block_size"), std::int64_t(1280));
    const RegistryEntry& m = e["batch=128,out=2560,in=5120,x_dtype=int8,w_dtype=int8"];
    QVERIFY(m.measured());
    QCOMPARE(m.latency_median_ns, 160560.0);
    QCOMPARE(m.compile_time_s, 0.728);
    QCOMPARE(m.imported_from, std::string("tpu-inference tpu_v6e.json"));
    QVERIFY(!e["batch=1024,out=1280,in=4096,x_dtype=int8,w_dtype=int8"].measured());
  }

  void flatBareLists() {
    QTemporaryDir dir;
    const auto file = write(dir, "tpu_v7.json", R"J({
      "1024,5120,4096,float8_e4m3fn,float4_e2m1fn": [256, 2560, 4096, 2],
      "16,2560,4096,float8_e4m3fn,float8_e4m3fn": [16, 1280, 4096]})J");
    const TpuImport in = read_tpu_inference(file, matmul_family(), {});
    QCOMPARE(in.from_lists, std::size_t(2));
    QCOMPARE(in.unmeasured, std::size_t(2));
    auto e = by_key(in);
    const Config& four = e["batch=1024,out=5120,in=4096,x_dtype=fp8_e4m3,w_dtype=float4_e2m1fn"].config;
    QCOMPARE(four.get("n_lane_multiplier"), std::int64_t(2));
    QCOMPARE(four.get("batch_block_size"), std::int64_t(256));
    const Config& three = e["batch=16,out=2560,in=4096,x_dtype=fp8_e4m3,w_dtype=float8_e4m3fn"].config;
    QVERIFY(!three.has("n_lane_multiplier"));  // tpu-inference's default; the family's fills it on lookup
    QCOMPARE(three.get("in_block_size"), std::int64_t(4096));

    // Other parameter names for the list, in order.
    KernelFamily renamed = matmul_family();
    renamed.default_space = SearchSpace({{"BT", {16}, ""}, {"OB", {1280}, ""}, {"IB", {4096}, ""}}, {});
    TpuOptions o;
    o.list_params = {"BT", "OB", "IB"};
    const auto one = write(dir, "one.json", R"J({"16,2560,4096,int8,int8": [16, 1280, 4096]})J");
    QCOMPARE(read_tpu_inference(one, renamed, o).entries.front().second.config.get("OB"), std::int64_t(1280));
  }

  void nestedAttentionLayout() {
    QTemporaryDir dir;
    const auto file = write(dir, "tpu_v7.json", kNested);
    TpuOptions o;
    o.fixed_fields = {"num_sequences=35"};
    const TpuImport in = read_tpu_inference(file, attention_family(), o);
    QCOMPARE(in.layout, TpuLayout::Nested);
    QCOMPARE(in.entries.size(), std::size_t(3));
    QCOMPARE(in.from_lists, std::size_t(1));
    QCOMPARE(in.unmeasured, std::size_t(3));
    // The sliding-window entry has no key in a family without sliding_window: skipped, said where.
    QCOMPARE(in.skipped.size(), std::size_t(1));
    QVERIFY2(contains(in.skipped.front(), "max_model_len-1024-sw-128") && contains(in.skipped.front(), "sliding"),
             in.skipped.front().c_str());
    auto e = by_key(in);
    const std::string k =
        "num_sequences=35,num_q_heads=16,num_kv_heads=2,head_dim=128,page_size=128,max_model_len=1024,dtype=bf16";
    QVERIFY(e.count(k));
    QCOMPARE(e[k].config.get("num_kv_pages_per_block"), std::int64_t(8));
    QCOMPARE(e[k].config.get("num_q_per_block"), std::int64_t(32));

    const TpuImport windowed = read_tpu_inference(file, attention_family(true), o);
    QCOMPARE(windowed.entries.size(), std::size_t(4));
    QVERIFY(windowed.skipped.empty());
    QVERIFY(by_key(windowed).count(
        "num_sequences=35,num_q_heads=16,num_kv_heads=2,head_dim=64,page_size=128,max_model_len=1024,dtype=bf16,"
        "sliding_window=128"));

    // The attention keys have no num_sequences: without --key it is asked for by name.
    const std::string err = input_error_of([&] { read_tpu_inference(file, attention_family(), {}); });
    QVERIFY2(contains(err, "num_sequences") && contains(err, "tpu_v7.json"), err.c_str());
  }

  void errorsNameFileAndKeyPath_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("needle");
    QTest::newRow("leaf one level up")
        << R"J({"128": {"q_bfloat16_kv_bfloat16": {"q_head-16_kv_head-2_head-128": [8, 32]}}})J"
        << R"(["128"].q_bfloat16_kv_bfloat16["q_head-16_kv_head-2_head-128"]: expected an object)";
    QTest::newRow("dtype level") << R"J({"128": {"bfloat16": {}}})J"
                                 << R"(["128"].bfloat16: expected "q_{dtype}_kv_{dtype}")";
    QTest::newRow("heads level") << R"J({"128": {"q_bfloat16_kv_bfloat16": {"heads-16": {}}}})J"
                                 << R"(["heads-16"]: expected "q_head-N_kv_head-N_head-N")";
    QTest::newRow("extra level")
        << R"J({"128": {"q_bfloat16_kv_bfloat16": {"q_head-16_kv_head-2_head-128": {"len-1024": [8, 32]}}}})J"
        << R"(["len-1024"]: expected "max_model_len-N-sw-None")";
    QTest::newRow("page size") << R"J({"128": {}, "big": {}})J"
                               << R"(: big: expected a page size)";
    QTest::newRow("mixed dtypes")
        << R"J({"128": {"q_bfloat16_kv_float8_e4m3fn": {"q_head-16_kv_head-2_head-128": {"max_model_len-1024-sw-None": [8, 32]}}}})J"
        << "q is bfloat16 and kv float8_e4m3fn";
    QTest::newRow("dtype not a choice")
        << R"J({"128": {"q_float16_kv_float16": {"q_head-16_kv_head-2_head-128": {"max_model_len-1024-sw-None": [8, 32]}}}})J"
        << "dtype=float16 is not supported (choices: bf16, f32)";
    QTest::newRow("list too long")
        << R"J({"128": {"q_bfloat16_kv_bfloat16": {"q_head-16_kv_head-2_head-128": {"max_model_len-1024-sw-None": [8, 32, 1]}}}})J"
        << "has 3 values, but the list's parameters are num_kv_pages_per_block, num_q_per_block";
    QTest::newRow("unknown parameter")
        << R"J({"128": {"q_bfloat16_kv_bfloat16": {"q_head-16_kv_head-2_head-128": {"max_model_len-1024-sw-None": {"config": {"bq": 8}}}}}})J"
        << "config has unknown parameter 'bq'";
    QTest::newRow("bad latency")
        << R"J({"128": {"q_bfloat16_kv_bfloat16": {"q_head-16_kv_head-2_head-128": {"max_model_len-1024-sw-None": {"config": {"num_q_per_block": 8}, "stats": {"latency_avg_ns": -1}}}}}})J"
        << "stats.latency_avg_ns";
    QTest::newRow("flat key length")
        << R"J({"16,2048,4096": [16, 256, 1024]})J"
        << R"(["16,2048,4096"]: key "16,2048,4096" has 3 values, but --key-fields names 5)";
    QTest::newRow("flat neither") << R"J({"16,2048,4096,int8,int8": 7})J"
                                  << R"(expected {"config", "stats", "metadata"} or a list of block sizes)";
    QTest::newRow("not an object") << "[1]"
                                   << "expected an object of tuned configs";
  }
  void errorsNameFileAndKeyPath() {
    QFETCH(QString, text);
    QFETCH(QString, needle);
    QTemporaryDir dir;
    const auto file = write(dir, "bad.json", text.toStdString());
    // tpu-inference's matmul keys start with a batch, its attention files with a page size.
    const bool flat = text.startsWith("{\"16");
    TpuOptions o;
    if (!flat) o.fixed_fields = {"num_sequences=35"};
    const KernelFamily family = flat ? matmul_family() : attention_family();
    const std::string e = input_error_of([&] { read_tpu_inference(file, family, o); });
    QVERIFY2(contains(e, needle.toStdString()), e.c_str());
    QVERIFY2(contains(e, "tpu-inference file") && contains(e, "bad.json"), e.c_str());
  }

  void optionErrors() {
    QTemporaryDir dir;
    const auto file = write(dir, "f.json", kFlat);
    TpuOptions o;
    o.key_fields = {"batch", "out", "Q"};
    QVERIFY(contains(input_error_of([&] { read_tpu_inference(file, matmul_family(), o); }), "no key field 'Q'"));
    o = {};
    o.fixed_fields = {"num_sequences"};
    QVERIFY(contains(input_error_of([&] { read_tpu_inference(file, matmul_family(), o); }), "give field=value"));
  }

  void flatExportRoundTrip() {
    Registry reg("worker", "tpu_v6e");
    reg.set("qmatmul", "batch=16,out=2560,in=4096,x_dtype=fp8_e4m3,w_dtype=float8_e4m3fn",
            measured(Config({{"batch_block_size", 16},
                             {"out_block_size", 1280},
                             {"in_block_size", 4096},
                             {"n_lane_multiplier", 2}}),
                     157870));
    RegistryEntry unmeasured;
    unmeasured.config = Config({{"batch_block_size", 128}, {"out_block_size", 2560}, {"in_block_size", 1280}});
    reg.set("qmatmul", "batch=128,out=2560,in=5120,x_dtype=int8,w_dtype=int8", unmeasured);
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    for (const bool lists : {false, true}) {
      TpuOptions o;
      o.lists = lists;
      const TpuFile f = export_tpu_inference(reg, matmul_family(), root / (lists ? "l" : "o"), o);
      QCOMPARE(f.path, root / (lists ? "l" : "o") / "quantized_matmul" / "tpu_v6e.json");
      const json j = json::parse(std::ifstream(f.path));
      // tpu-inference's loader builds its key as f"{n_batch},{n_out},{n_in},{x_q_dtype},{w_q_dtype}".
      const json& v = j.at("16,2560,4096,float8_e4m3fn,float8_e4m3fn");
      if (lists) {
        QCOMPARE(v, json({16, 1280, 4096, 2}));
        QCOMPARE(j.at("128,2560,5120,int8,int8"), json({128, 2560, 1280}));
      } else {
        QCOMPARE(v["config"]["out_block_size"], json(1280));
        QCOMPARE(v["stats"]["latency_avg_ns"], json(157870.0));
        QCOMPARE(j.at("128,2560,5120,int8,int8")["stats"], json::object());
      }
      auto back = by_key(read_tpu_inference(f.path, matmul_family(), {}));
      QCOMPARE(back.size(), std::size_t(2));
      for (const auto& [key, e] : reg.entries().at("qmatmul")) {
        QVERIFY2(back.count(key), key.c_str());
        QVERIFY(back[key].config.same_values(e.config));
        QCOMPARE(back[key].measured(), !lists && e.measured());  // lists hold no measurement
        if (back[key].measured()) QCOMPARE(back[key].latency_median_ns, e.latency_median_ns);
      }
    }
  }

  void nestedExportRoundTrip() {
    Registry reg("worker", "tpu_v7");
    const std::string rest = ",num_q_heads=16,num_kv_heads=2,head_dim=128,page_size=128,max_model_len=1024,dtype=bf16";
    const auto cfg = [](int kv, int q) { return Config({{"num_kv_pages_per_block", kv}, {"num_q_per_block", q}}); };
    reg.set("paged_attention", "num_sequences=16" + rest, measured(cfg(4, 16), 900));
    reg.set("paged_attention", "num_sequences=64" + rest, measured(cfg(8, 32), 2000));
    reg.set("paged_attention",
            "num_sequences=64,num_q_heads=32,num_kv_heads=8,head_dim=128,page_size=128,"
            "max_model_len=2048,dtype=bf16",
            measured(cfg(16, 64), 3000));
    TpuOptions o;
    o.lists = true;
    const TpuFile f = tpu_inference_file(reg, attention_family(), o);
    QCOMPARE(f.path, fs::path("ragged_paged_attention") / "v3" / "tpu_v7.json");
    QCOMPARE(f.entries, std::size_t(2));
    QCOMPARE(f.folded, std::size_t(1));  // num_sequences=16 and 64 share tpu-inference's key: 64's is written
    QCOMPARE(f.json["128"]["q_bfloat16_kv_bfloat16"]["q_head-16_kv_head-2_head-128"]["max_model_len-1024-sw-None"],
             json({8, 32}));

    QTemporaryDir dir;
    const TpuFile written = export_tpu_inference(reg, attention_family(), dir.path().toStdString(), {});
    o = {};
    o.fixed_fields = {"num_sequences=64"};
    auto back = by_key(read_tpu_inference(written.path, attention_family(), o));
    QCOMPARE(back.size(), std::size_t(2));
    QVERIFY(back["num_sequences=64" + rest].config.same_values(cfg(8, 32)));
    QCOMPARE(back["num_sequences=64" + rest].latency_avg_ns, 2000.0);
  }

  void exportErrors() {
    const std::string none =
        input_error_of([] { tpu_inference_file(Registry("worker", "tpu_v7"), attention_family(), {}); });
    QVERIFY2(contains(none, "no paged_attention entries"), none.c_str());
    Registry reg("worker", "tpu_v6e");
    reg.set("qmatmul", "batch=16,out=2560,in=4096,x_dtype=int8,w_dtype=int8",
            measured(Config({{"batch_block_size", 16}, {"out_block_size", 1280}}), 10));
    TpuOptions o;
    o.lists = true;
    const std::string e = input_error_of([&] { tpu_inference_file(reg, matmul_family(), o); });
    QVERIFY2(contains(e, "gives 2 of the 3 values") && contains(e, "--list-params"), e.c_str());
  }
};

QTEST_APPLESS_MAIN(TestRegistryFormatTpu)
#include "test_registry_format_tpu.moc"
