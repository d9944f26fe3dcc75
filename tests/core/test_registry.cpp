// Registry files: round trip, backup on save, errors that name the file and the JSON path (and
// leave the file alone), and lookup's exact / bucket / default fallbacks with their warnings.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "ktune/kernel_family.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

KernelFamily gemm_family() {
  KernelFamily f;
  f.name = "gemm";
  f.backend = "cpu";
  f.bucket_field = "M";
  f.tp_splits = {{TpSplitDim::Out, {{"N"}}}, {TpSplitDim::In, {{"K"}}}};
  f.default_config = Config({{"BM", 32}, {"BN", 32}});
  f.default_space = SearchSpace({{"BN", {32, 64}, ""}, {"BM", {16, 32, 64}, ""}}, {});
  return f;
}

Problem gemm(const std::string& m, const std::string& n = "4096", const std::string& k = "4096") {
  Problem p;
  p.family = "gemm";
  p.fields = {{"M", m}, {"N", n}, {"K", k}, {"dtype", "f32"}};
  return p;
}

RegistryEntry entry(std::int64_t bm, double median) {
  RegistryEntry e;
  e.config = Config({{"BM", bm}, {"BN", 64}});
  e.latency_avg_ns = median * 1.01;
  e.latency_median_ns = median;
  e.latency_std_ns = median * 0.02;
  e.compile_time_s = 0.5;
  e.benchmarking_method = "amortized";
  e.samples_ns = {median * 0.99, median, median * 1.03, 1.0 / 3.0};
  e.run = "gemm_20261123_043000";
  e.tuned_at = "2026-11-23T04:30:00Z";
  e.ktune_version = "0.1.0";
  return e;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

const std::string kKey16 = "M=16,N=4096,K=4096,dtype=f32";

}  // namespace

class TestRegistry : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path root() const { return fs::path(tmp_.path().toStdString()); }

  // A saved registry file with one gemm entry, and its text.
  fs::path saved(const std::string& name, std::string* text = nullptr) {
    Registry reg("cpu", name);
    reg.set("gemm", kKey16, entry(64, 1000));
    const fs::path file = Registry::file_for(root(), "cpu", name);
    reg.save(file);
    if (text) *text = read_text_file(file);
    return file;
  }

  // Loading `text` from a file fails naming the file; the file is left as it was.
  std::string load_error(const std::string& name, const std::string& text) {
    const fs::path file = saved(name);
    write_file(file, text);
    const std::string err = input_error_of([&] { Registry::load(file); });
    if (read_text_file(file) != text) return "the file was changed";
    if (!contains(err, file.string())) return "the error does not name the file: " + err;
    return err;
  }

 private slots:
  void fileFor() {
    QCOMPARE(Registry::file_for("td", "cuda", "nvidia-h100"), fs::path("td/cuda/nvidia-h100.json"));
    QVERIFY(contains(input_error_of([] { Registry::file_for("td", "cpu", "../x"); }), "../x"));
    QVERIFY(contains(input_error_of([] { Registry::file_for("td", "", "x"); }), "backend"));
  }

  void saveLoadRoundTripWithBackup() {
    Registry reg("cpu", "test-cpu");
    reg.set("gemm", kKey16, entry(64, 1000));
    reg.set("gemm", "M=32,N=4096,K=4096,dtype=f32", entry(128, 1500));
    reg.set("qmatmul", "batch=1,out=8,in=8", entry(16, 10));
    const fs::path file = root() / "td" / "cpu" / "test-cpu.json";  // folders created by save
    reg.save(file);
    QVERIFY(!fs::exists(file.string() + ".bak"));
    const std::string first = read_text_file(file);
    const auto j = nlohmann::json::parse(first);
    QCOMPARE(j["ktune_registry"].get<int>(), 1);
    QCOMPARE(j["device"].get<std::string>(), std::string("test-cpu"));
    QCOMPARE(j["entries"]["gemm"][kKey16]["stats"]["latency_median_ns"].get<double>(), 1000.0);
    QCOMPARE(j["entries"]["gemm"][kKey16]["metadata"]["benchmarking_method"].get<std::string>(),
             std::string("amortized"));

    const Registry back = Registry::load(file);
    QCOMPARE(back.size(), std::size_t(3));
    QCOMPARE(back.backend(), std::string("cpu"));
    QVERIFY(back.to_json() == reg.to_json());
    QCOMPARE(back.find("gemm", kKey16)->samples_ns[3], 1.0 / 3.0);
    QVERIFY(back.find("gemm", "M=64") == nullptr);

    reg.set("gemm", kKey16, entry(32, 900));
    reg.save(file);
    QCOMPARE(read_text_file(file.string() + ".bak"), first);
    QCOMPARE(Registry::load(file).find("gemm", kKey16)->latency_median_ns, 900.0);
  }

  void missingFileIsEmpty() {
    const Registry reg = Registry::load(root() / "cuda" / "nvidia-h100.json");
    QCOMPARE(reg.size(), std::size_t(0));
    QCOMPARE(reg.backend(), std::string("cuda"));
    QCOMPARE(reg.device(), std::string("nvidia-h100"));
    QVERIFY(!fs::exists(root() / "cuda"));
  }

  void malformedJsonSuggestsBackup() {
    std::string text;
    const fs::path file = saved("broken", &text);
    Registry::load(file).save(file);  // a second save leaves a .bak to restore from
    const std::string err = load_error("broken", text.substr(0, text.size() / 2));
    QVERIFY2(contains(err, "not valid JSON") && contains(err, file.string() + ".bak"), err.c_str());
    // Without a backup the advice is to fix or move the file.
    const std::string no_bak = load_error("broken-nobak", "{\"ktune_registry\": 1,");
    QVERIFY2(contains(no_bak, "move it away"), no_bak.c_str());
  }

  void wrongTypesNameTheJsonPath() {
    std::string text;
    saved("types", &text);
    auto with = [&](const std::string& from, const std::string& to) {
      std::string t = text;
      const auto at = t.find(from);
      return at == std::string::npos ? std::string("test setup: '" + from + "' not found")
                                     : t.replace(at, from.size(), to);
    };
    std::string err = load_error("types", with("\"latency_median_ns\": 1000.0", "\"latency_median_ns\": \"fast\""));
    QVERIFY2(contains(err, "entries.gemm[\"" + kKey16 + "\"].stats.latency_median_ns: expected a number"), err.c_str());
    err = load_error("types", with("\"BM\": 64", "\"BM\": \"64\""));
    QVERIFY2(contains(err, "entries.gemm[\"" + kKey16 + "\"].config") && contains(err, "BM"), err.c_str());
    err = load_error("types", with("\"run\": ", "\"rum\": "));
    QVERIFY2(contains(err, "entries.gemm[\"" + kKey16 + "\"].metadata: missing field \"run\""), err.c_str());
    err = load_error("types", with("1000.0,\n", "null,\n"));
    QVERIFY2(contains(err, "metadata.samples_ns[1]: expected a number"), err.c_str());
    err = load_error("types", with("\"ktune_registry\": 1", "\"ktune_registry\": 2"));
    QVERIFY2(contains(err, "format 2"), err.c_str());
    err = load_error("types", with("\"ktune_registry\": 1", "\"registry\": 1"));
    QVERIFY2(contains(err, "not a ktune registry"), err.c_str());
    err = load_error("types", "[1, 2]");
    QVERIFY2(contains(err, "not a ktune registry"), err.c_str());
  }

  void lookupExactNearestBucketDefault() {
    Registry reg("cpu", "test-cpu");
    reg.set("gemm", kKey16, entry(16, 500));
    reg.set("gemm", "M=64,N=4096,K=4096,dtype=f32", entry(64, 800));
    reg.set("gemm", "M=16,N=1024,K=4096,dtype=f32", entry(64, 300));
    const KernelFamily fam = gemm_family();

    LookupResult r = reg.lookup(fam, gemm("16"));
    QCOMPARE(int(r.source), int(LookupSource::Exact));
    QCOMPARE(r.config.get("BM"), std::int64_t(16));
    QCOMPARE(r.config.key(), std::string("BN=64,BM=16"));  // the space's order, not the file's
    QVERIFY(r.warning.empty());
    QVERIFY(r.entry == reg.find("gemm", kKey16));

    // Rounded up to the next tuned M (64, not the power of two 32, which is not tuned)...
    r = reg.lookup(fam, gemm("20"));
    QCOMPARE(int(r.source), int(LookupSource::Bucket));
    QCOMPARE(r.matched_key, std::string("M=64,N=4096,K=4096,dtype=f32"));
    QCOMPARE(r.config.get("BM"), std::int64_t(64));
    QVERIFY2(contains(r.warning, "M=20,N=4096,K=4096,dtype=f32") &&
                 contains(r.warning, "ktune tune gemm --backend cpu --shape \"M=20 N=4096 K=4096 dtype=f32\""),
             r.warning.c_str());
    r = reg.lookup(fam, gemm("1"));
    QCOMPARE(r.matched_key, kKey16);
    // ... else the largest tuned M below.
    r = reg.lookup(fam, gemm("1000"));
    QCOMPARE(int(r.source), int(LookupSource::Bucket));
    QCOMPARE(r.matched_key, std::string("M=64,N=4096,K=4096,dtype=f32"));

    // Other N, K or dtype: no bucket; the default is the most common best config (BM=64: 2 of 3).
    r = reg.lookup(fam, gemm("16", "512"));
    QCOMPARE(int(r.source), int(LookupSource::Default));
    QVERIFY(r.entry == nullptr);
    QCOMPARE(r.config.key(), std::string("BN=64,BM=64"));
    QVERIFY2(contains(r.warning, "M=16,N=512,K=4096,dtype=f32") && contains(r.warning, "most common") &&
                 contains(r.warning, "--shape \"M=16 N=512 K=4096 dtype=f32\""),
             r.warning.c_str());
    QVERIFY2(contains(r.warning, "not checked against the device"), r.warning.c_str());

    // With the device known, a default the constraints prune there is passed over.
    KernelFamily small = fam;
    small.default_space = SearchSpace({{"BN", {32, 64}, ""}, {"BM", {16, 32, 64}, ""}}, {{"BM <= max_bm", ""}});
    LookupContext ctx;
    ctx.device = {{"max_bm", 32}};
    r = reg.lookup(small, gemm("16", "512"), ctx);
    QCOMPARE(r.config.key(), std::string("BN=64,BM=16"));  // the next most common, allowed
    ctx.device = {{"max_bm", 8}};  // nothing the registry has, nor the family default: the first valid
    small.default_space = SearchSpace({{"BN", {32, 64}, ""}, {"BM", {8, 16, 32, 64}, ""}}, {{"BM <= max_bm", ""}});
    r = reg.lookup(small, gemm("16", "512"), ctx);
    QCOMPARE(r.config.key(), std::string("BN=32,BM=8"));
    QVERIFY2(contains(r.warning, "first config the family's constraints allow"), r.warning.c_str());
    // Device properties that lack one the constraints read: not checked, and the warning says which.
    ctx.device = {{"sms", 132}};
    r = reg.lookup(small, gemm("16", "512"), ctx);
    QCOMPARE(r.config.key(), std::string("BN=64,BM=64"));
    QVERIFY2(contains(r.warning, "not checked") && contains(r.warning, "max_bm"), r.warning.c_str());

    // An empty registry: the family's own default.
    r = Registry("cpu", "x").lookup(fam, gemm("16"));
    QCOMPARE(r.config.key(), std::string("BN=32,BM=32"));
  }

  // A bucket's config is checked at the looked-up shape on the serving device: one that cannot
  // launch there (the spec's derived limits) is passed over; one the space's other constraints
  // prune there (most steer the search) is used, and the warning names the constraint.
  void lookupChecksABucketAtTheShapeLookedUp() {
    Registry reg("cpu", "test-cpu");
    reg.set("gemm", kKey16, entry(16, 500));
    reg.set("gemm", "M=64,N=4096,K=4096,dtype=f32", entry(64, 800));
    KernelFamily fam = gemm_family();
    fam.key_fields = {{"M"}, {"N"}, {"K"}, {"dtype", false}};
    fam.launch_limits = {{"BM*BN <= max_tile", "derived: the tile within the device's max_tile"}};
    fam.default_space = SearchSpace({{"BN", {32, 64}, ""}, {"BM", {8, 16, 32, 64}, ""}},
                                    {{"BM <= M", "block rows at most M"}, fam.launch_limits.front()});
    LookupContext ctx;
    ctx.device = {{"max_tile", 2048}};

    // M = 32: the next tuned M up (64) has a 64 x 64 tile, past max_tile; the one below (16) launches.
    LookupResult r = reg.lookup(fam, gemm("32"), ctx);
    QCOMPARE(int(r.source), int(LookupSource::Bucket));
    QCOMPARE(r.matched_key, kKey16);
    QVERIFY2(contains(r.warning, "nearest tuned one that can launch, " + kKey16) &&
                 contains(r.warning, "passed over M=64,N=4096,K=4096,dtype=f32, whose config cannot launch here") &&
                 contains(r.warning, "max_tile") && !contains(r.warning, "outside the space") &&
                 !contains(r.warning, "not checked"),
             r.warning.c_str());
    // M = 8: M = 16's config launches but its 16 rows are more than a tune of M = 8 would try: used, and said.
    r = reg.lookup(fam, gemm("8"), ctx);
    QCOMPARE(r.matched_key, kKey16);
    QVERIFY2(contains(r.warning, "outside the space a tune of this shape searches") &&
                 contains(r.warning, "block rows at most M") && !contains(r.warning, "passed over"),
             r.warning.c_str());
    // No bucket launches: the default path, naming the buckets it passed over.
    ctx.device = {{"max_tile", 512}};
    r = reg.lookup(fam, gemm("32"), ctx);
    QCOMPARE(int(r.source), int(LookupSource::Default));
    QVERIFY(r.config.get("BM") * r.config.get("BN") <= 512);
    QVERIFY2(contains(r.warning, "nor a tuned bucket of M that can launch") &&
                 contains(r.warning, "passed over " + kKey16) &&
                 contains(r.warning, "passed over M=64,N=4096,K=4096,dtype=f32"),
             r.warning.c_str());
    // Without the device's properties nothing is checked: the nearest bucket, and the warning says so.
    r = reg.lookup(fam, gemm("32"));
    QCOMPARE(r.matched_key, std::string("M=64,N=4096,K=4096,dtype=f32"));
    QVERIFY2(contains(r.warning, "not checked against the device's constraints"), r.warning.c_str());
  }

  void lookupOfTheLocalShapeFindsWhatTpTuned() {
    // Tuned with --tp-size 8 --tp-split-dim out: stored under the local key, tp in metadata.
    Registry reg("cpu", "test-cpu");
    RegistryEntry e = entry(32, 300);
    e.tp_size = 8;
    e.tp_split_dim = "out";
    reg.set("gemm", gemm("32", "512").local_key(), e);

    Problem sharded = gemm("32", "512");
    sharded.tp_size = 8;
    sharded.tp_split_dim = TpSplitDim::Out;
    QCOMPARE(int(reg.lookup(gemm_family(), sharded).source), int(LookupSource::Exact));
    QCOMPARE(int(reg.lookup(gemm_family(), gemm("32", "512")).source), int(LookupSource::Exact));  // by hand

    Problem local = gemm("20", "512");  // the warning's command names the global shape
    local.tp_size = 8;
    local.tp_split_dim = TpSplitDim::Out;
    const LookupResult r = reg.lookup(gemm_family(), local);
    QCOMPARE(r.matched_key, std::string("M=32,N=512,K=4096,dtype=f32"));
    QVERIFY2(contains(r.warning, "--shape \"M=20 N=4096 K=4096 dtype=f32\" --tp-size 8 --tp-split-dim out"),
             r.warning.c_str());

    // The metadata survives a save and load.
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "r.json";
    reg.save(file);
    const Registry back = Registry::load(file);
    QCOMPARE(back.find("gemm", "M=32,N=512,K=4096,dtype=f32")->tp_size, 8);
    QCOMPARE(back.find("gemm", "M=32,N=512,K=4096,dtype=f32")->tp_split_dim, std::string("out"));
    QVERIFY(back.migrations().empty());
  }

  // Attention shards heads; a replicated kv head count (1 per rank) multiplies back to tp_size,
  // a global shape whose local shape is the one looked up.
  void tpHeadsCommandGivesTheLocalShapeBack() {
    KernelFamily f;
    f.name = "paged_attention";
    f.backend = "cpu";
    f.bucket_field = "num_sequences";
    f.key_fields = {
        {"num_sequences", true, "", {}, ""}, {"num_q_heads", true, "", {}, ""}, {"num_kv_heads", true, "", {}, ""}};
    f.tp_splits = {{TpSplitDim::Heads, {{"num_q_heads"}, {"num_kv_heads", true}}}};
    f.default_config = Config({{"BM", 32}, {"BN", 32}});
    f.default_space = SearchSpace({{"BN", {32, 64}, ""}, {"BM", {16, 32, 64}, ""}}, {});
    const Problem local = expand_shape(f, "num_sequences=16 num_q_heads=32 num_kv_heads=8", 16).at(0);
    QCOMPARE(local.local_key(), std::string("num_sequences=16,num_q_heads=2,num_kv_heads=1"));
    const LookupResult r = Registry("cpu", "test-cpu").lookup(f, local);
    const std::string global = "num_sequences=16 num_q_heads=32 num_kv_heads=16";
    QVERIFY2(contains(r.warning, "--shape \"" + global + "\" --tp-size 16 --tp-split-dim heads"), r.warning.c_str());
    QCOMPARE(expand_shape(f, global, 16, TpSplitDim::Heads).at(0), local);
  }

  void oldTpKeysAreMigratedOnRead() {
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "old.json";
    Registry old("cpu", "test-cpu");
    old.set("gemm", "M=32,N=512,K=4096,dtype=f32,tp=8/out", entry(32, 300));
    old.set("gemm", "M=16,N=512,K=4096,dtype=f32,tp=8/out", entry(16, 300));
    old.set("gemm", "M=16,N=512,K=4096,dtype=f32", entry(64, 200));  // faster: kept
    old.save(file);
    const Registry reg = Registry::load(file);
    QCOMPARE(reg.size(), std::size_t(2));
    const RegistryEntry* e = reg.find("gemm", "M=32,N=512,K=4096,dtype=f32");
    QVERIFY(e != nullptr);
    QCOMPARE(e->tp_size, 8);
    QCOMPARE(e->tp_split_dim, std::string("out"));
    QCOMPARE(reg.find("gemm", "M=16,N=512,K=4096,dtype=f32")->config.get("BM"), std::int64_t(64));
    QCOMPARE(reg.migrations().size(), std::size_t(2));
    QVERIFY2(contains(reg.migrations()[0] + reg.migrations()[1], "dropped"), reg.migrations()[0].c_str());
  }

  // save() writes the registry one entry at a time; the text must be the whole value's dump(2),
  // whatever the entries hold (optional metadata, keys to escape, families with none).
  void saveWritesTheDumpOfToJson() {
    const fs::path file = root() / "text" / "cpu" / "test-cpu.json";
    Registry reg("cpu", "test-cpu");
    reg.save(file);
    QCOMPARE(read_text_file(file), reg.to_json().dump(2) + "\n");
    RegistryEntry full = entry(32, 1500);
    full.tp_size = 2;
    full.tp_split_dim = "out";
    full.versions = {{"compiler", "GCC 12.2"}, {"cuda", "12.4"}};
    full.imported_from = "tpu-tune \"x\".json";
    full.chosen_by = ChosenBy::Remeasure;
    full.search_median_ns = 1490.5;
    full.flags.noisy = true;
    full.conditions = {{kSmClockMhz, 1425}, {kPowerW, 690.5}, {kClockLimited, 0.7}};
    reg.set("gemm", kKey16, entry(64, 1000));
    reg.set("gemm", "M=1,N=\u00e9\\\"\n,K=1,dtype=f32", full);
    reg.set("qmatmul", "batch=1,out=8,in=8,x_dtype=f32,w_dtype=int8", entry(16, 1e-300));
    reg.save(file);
    QCOMPARE(read_text_file(file), reg.to_json().dump(2) + "\n");
    QCOMPARE(Registry::load(file).to_json(), reg.to_json());
  }

  // The device's conditions while an entry was measured: written beside its stats only when read,
  // back through both readers; an entry without them (older files, imports) loads with none.
  void conditionsAreKeptBesideTheStats() {
    Registry reg("cpu", "test-cpu");
    RegistryEntry hot = entry(64, 1000);
    hot.conditions = {{kSmClockMhz, 1425}, {kPowerW, 690}, {kClockLimited, 1}};
    reg.set("gemm", kKey16, hot);
    reg.set("gemm", "M=32,N=4096,K=4096,dtype=f32", entry(32, 1500));
    const fs::path file = root() / "conditions" / "cpu" / "test-cpu.json";
    reg.save(file);
    const std::string text = read_text_file(file);
    const auto j = nlohmann::json::parse(text);
    const auto& saved = j["entries"]["gemm"][kKey16];
    QCOMPARE(saved["conditions"][kSmClockMhz].get<double>(), 1425.0);
    QCOMPARE(saved["conditions"][kClockLimited].get<double>(), 1.0);
    QVERIFY(!saved["stats"].contains("conditions") && !saved["metadata"].contains("conditions"));
    QVERIFY(!j["entries"]["gemm"]["M=32,N=4096,K=4096,dtype=f32"].contains("conditions"));
    for (const bool nlohmann_reader : {false, true}) {
      const Registry back = Registry::from_text(text, "f", nlohmann_reader);
      QCOMPARE(back.find("gemm", kKey16)->conditions, hot.conditions);
      QVERIFY(back.find("gemm", "M=32,N=4096,K=4096,dtype=f32")->conditions.empty());
      QCOMPARE(describe(back.find("gemm", kKey16)->conditions), std::string("1425 MHz, 690 W, clock limited"));
    }
    QCOMPARE(RegistryEntry::from_json(hot.to_json()).conditions, hot.conditions);
  }

  // A condition that is no non-negative number, or a share above 1, is refused naming the entry
  // and the field, by both readers.
  void malformedConditionsNameTheEntry() {
    Registry reg("cpu", "bad-conditions");
    RegistryEntry hot = entry(64, 1000);
    hot.conditions = {{kSmClockMhz, 1425}, {kPowerW, 690}, {kClockLimited, 0.5}};
    reg.set("gemm", kKey16, hot);
    const fs::path file = Registry::file_for(root(), "cpu", "bad-conditions");
    reg.save(file);
    const std::string text = read_text_file(file);
    const auto with = [&](const std::string& from, const std::string& to) {
      std::string t = text;
      const auto at = t.find(from);
      return at == std::string::npos ? std::string("test setup: '" + from + "' not found")
                                     : t.replace(at, from.size(), to);
    };
    const std::string entry_path = "entries.gemm[\"" + kKey16 + "\"].conditions.";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {with("\"power_w\": 690.0", "\"power_w\": \"hot\""), entry_path + "power_w: expected a number, got \"hot\""},
        {with("\"sm_clock_mhz\": 1425.0", "\"sm_clock_mhz\": -1425.0"),
         entry_path + "sm_clock_mhz: expected a non-negative number"},
        {with("\"clock_limited\": 0.5", "\"clock_limited\": 1.5"),
         entry_path + "clock_limited: expected a share of readings, at most 1"},
        {with("\"conditions\": {", "\"conditions\": [1], \"x\": {"), entry_path.substr(0, entry_path.size() - 1)},
    };
    for (const auto& c : cases) {
      const std::string& bad = c.first;  // clang 14 (CI's sanitizer build) captures no structured binding
      const std::string err = load_error("bad-conditions", bad);
      QVERIFY2(contains(err, c.second), (err + " | wanted " + c.second).c_str());
      const std::string also = input_error_of([&] { Registry::from_text(bad, "f", true); });
      QVERIFY2(contains(also, c.second), also.c_str());
    }
  }

  void entriesAreCheckedAgainstTheSpace() {
    Registry reg("cpu", "test-cpu");
    RegistryEntry e = entry(16, 500);
    e.config.set("BX", 3);
    reg.set("gemm", kKey16, e);
    QString err;
    try {
      reg.lookup(gemm_family(), gemm("20"));
    } catch (const InputError& x) {
      err = x.what();
    }
    QVERIFY2(err.contains("entry gemm M=16,N=4096,K=4096,dtype=f32") && err.contains("unknown parameter 'BX'"),
             qPrintable(err));
    e = entry(16, 500);
    e.config.set("BN", "wide");
    reg.set("gemm", kKey16, e);
    QVERIFY_THROWS_EXCEPTION(InputError, reg.lookup(gemm_family(), gemm("16")));
    // A parameter an older entry lacks takes the family default's value.
    e = entry(16, 500);
    e.config = Config({{"BM", 16}});
    reg.set("gemm", kKey16, e);
    QCOMPARE(reg.lookup(gemm_family(), gemm("16")).config.key(), std::string("BN=32,BM=16"));
  }

  void versionsAreRecordedAndCompared() {
    Registry reg("cpu", "test-cpu");
    RegistryEntry e = entry(16, 500);
    e.versions = {{"cuda_driver", "12.4"}, {"nvrtc", "12.4"}};
    reg.set("gemm", kKey16, e);
    QTemporaryDir dir;
    const fs::path file = fs::path(dir.path().toStdString()) / "v.json";
    reg.save(file);
    const Registry back = Registry::load(file);
    QCOMPARE(back.find("gemm", kKey16)->versions, e.versions);
    LookupContext ctx;
    ctx.versions = {{"cuda_driver", "12.4"}, {"nvrtc", "12.4"}, {"cublas", "12.4.5"}};
    QVERIFY(back.lookup(gemm_family(), gemm("16"), ctx).version_warning.empty());
    ctx.versions = {{"cuda_driver", "12.8"}, {"nvrtc", "12.4"}};
    const LookupResult r = back.lookup(gemm_family(), gemm("16"), ctx);
    QVERIFY2(contains(r.version_warning, "cuda_driver 12.4") && contains(r.version_warning, "cuda_driver 12.8") &&
                 !contains(r.version_warning, "nvrtc") && contains(r.version_warning, "ktune tune gemm"),
             r.version_warning.c_str());
  }
};

QTEST_APPLESS_MAIN(TestRegistry)
#include "test_registry.moc"
