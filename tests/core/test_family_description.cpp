// A family as data for families a build need not have (a worker's): what a run records, what the
// registry file keeps (written as dump(2) writes it, read back by both readers), and where a
// registry command finds a family, with errors that say what to pass.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>

#include "ktune/family_description.h"
#include "ktune/files.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

KernelFamily worker_family() {
  KernelFamily f;
  f.name = "triton_gemm";
  f.backend = "triton";
  f.description = "a Triton GEMM";
  f.key_fields = {{"M", true, "", {}, ""}, {"N", true, "4096", {}, ""}, {"dtype", false, "f16", {"f16", "bf16"}, ""}};
  f.bucket_field = "M";
  f.flops_expr = "2*M*N";
  f.default_space = SearchSpace({{"BLOCK_M", {32, 64}, ""}, {"num_warps", {4, 8}, ""}}, {{"BLOCK_M <= M", ""}});
  f.default_config = Config({{"BLOCK_M", 32}, {"num_warps", 4}});
  f.source = "worker";
  return f;
}

RegistryEntry entry() {
  RegistryEntry e;
  e.config = Config({{"BLOCK_M", 64}, {"num_warps", 8}});
  e.latency_avg_ns = e.latency_median_ns = 1000;
  e.benchmarking_method = "amortized";
  e.samples_ns = {1000, 1001};
  e.run = "r";
  e.tuned_at = "2026-01-01T00:00:00Z";
  e.ktune_version = "0.1.0";
  return e;
}

}  // namespace

class TestFamilyDescription : public QObject {
  Q_OBJECT
  QTemporaryDir tmp;
  fs::path root() const { return fs::path(tmp.path().toStdString()); }

 private slots:
  void builtInFamiliesAreNotDescribed() {
    KernelFamily f = worker_family();
    f.source = "built-in";
    QVERIFY(describe_family(f, f.default_space).is_null());
    f.source = "built-in gemm.json";  // a GPU backend's built-in spec
    QVERIFY(describe_family(f, f.default_space).is_null());
  }

  void descriptionReadsBackAsTheFamily() {
    const KernelFamily f = worker_family();
    const KernelFamily back = family_from_description(describe_family(f, f.default_space), "triton", "test");
    QCOMPARE(back.name, f.name);
    QCOMPARE(back.backend, std::string("triton"));
    QCOMPARE(back.bucket_field, f.bucket_field);
    QCOMPARE(back.flops_expr, f.flops_expr);
    QCOMPARE(back.key_fields.size(), f.key_fields.size());
    QCOMPARE(back.key_fields[2].choices, f.key_fields[2].choices);
    QCOMPARE(back.key_fields[1].default_value, std::string("4096"));
    QCOMPARE(back.default_space.to_json(), f.default_space.to_json());
    QCOMPARE(back.default_config.key(), f.default_config.key());
  }

  // A run's and a registry's description keep how the family shards and its shape rules, so a
  // lookup --tp-size and a shape check need no worker.
  void descriptionKeepsSplitsAndShapeRules() {
    KernelFamily f = worker_family();
    f.tp_splits = {{TpSplitDim::Out, {{"N"}}}, {TpSplitDim::In, {{"M"}}}};
    f.shape_rules = {{"mod(N, 64) == 0", "N must be a multiple of 64"}};
    const json d = describe_family(f, f.default_space);
    const KernelFamily back = family_from_description(d, "triton", "test");
    QCOMPARE(back.tp_splits.size(), std::size_t(2));
    QCOMPARE(back.resolve_tp_split(TpSplitDim::Out).fields.at(0).name, std::string("N"));
    QCOMPARE(back.resolve_tp_split(TpSplitDim::In).fields.at(0).name, std::string("M"));
    QCOMPARE(back.shape_rules, f.shape_rules);
    QCOMPARE(describe_family(back, back.default_space), d);
    const fs::path file = root() / "tp" / "triton" / "mi300x.json";
    Registry reg("triton", "mi300x");
    reg.set_family_description(f.name, d);
    reg.save(file);
    const KernelFamily kept = registry_family(f.name, "triton", {}, file);
    QCOMPARE(kept.shape_rules, f.shape_rules);
    QCOMPARE(kept.tp_splits.size(), std::size_t(2));
    json bad = d;
    bad["tp_head_fields"] = json::array({"dtype"});
    const std::string err = input_error_of([&] { family_from_description(bad, "triton", "FILE"); });
    QCOMPARE(err, std::string("FILE: tp_head_fields[0]: 'dtype' must be a numeric key field"));
  }

  void aWorkerWithoutASpaceIsDescribedWithTheRunsSpace() {
    KernelFamily f = worker_family();
    const SearchSpace run_space = f.default_space;
    f.default_space = SearchSpace();
    QCOMPARE(describe_family(f, run_space)["space"], run_space.to_json());
  }

  // A bad description names the file, where in it, and what is wrong, in the description's own
  // terms: nothing of the worker hello the family was first offered in.
  void aBadDescriptionNamesWhereItIs() {
    const std::string err = input_error_of([] { family_from_description(json{{"name", "x"}}, "triton", "FILE"); });
    QCOMPARE(err, std::string("FILE: missing \"key_fields\""));
    const std::string notObject = input_error_of([] { family_from_description(json("x"), "triton", "FILE"); });
    QCOMPARE(notObject, std::string("FILE: expected an object, got \"x\""));
    const KernelFamily f = worker_family();
    json bad = describe_family(f, f.default_space);
    bad["space"] = json::array();
    const fs::path file = root() / "bad" / "triton" / "mi300x.json";
    Registry reg("triton", "mi300x");
    reg.set_family_description(f.name, bad);
    reg.save(file);
    const std::string kept = input_error_of([&] { registry_family(f.name, "triton", {}, file); });
    QCOMPARE(kept, "registry " + file.string() + ": families." + f.name +
                       ": space: expected {\"parameters\": [{\"name\", \"values\"}, ...]}");
  }

  // The registry keeps descriptions in "families"; its own writer's text is dump(2)'s, and both
  // readers give them back.
  void registryKeepsDescriptions() {
    const fs::path file = root() / "reg" / "triton" / "mi300x.json";
    const KernelFamily f = worker_family();
    Registry reg("triton", "mi300x");
    reg.set(f.name, "M=64,N=4096,dtype=f16", entry());
    reg.set_family_description(f.name, describe_family(f, f.default_space));
    json odd = describe_family(f, f.default_space);
    odd["name"] = "odd";
    odd["description"] = "quotes \" and \u00e9 and a\nnewline";
    reg.set_family_description("odd", odd);
    reg.save(file);
    const std::string text = read_text_file(file);
    QCOMPARE(text, reg.to_json().dump(2) + "\n");
    QCOMPARE(Registry::load(file).family_descriptions(), reg.family_descriptions());
    QCOMPARE(Registry::from_text(text, "test", true).family_descriptions(), reg.family_descriptions());
    // Serving code: the family from the registry it loaded, then lookup.
    const Registry loaded = Registry::load(file);
    const KernelFamily served =
        family_from_description(loaded.family_descriptions().at(f.name), loaded.backend(), file.string());
    Problem p;
    p.family = f.name;
    p.fields = {{"M", "64"}, {"N", "4096"}, {"dtype", "f16"}};
    const LookupResult exact = loaded.lookup(served, p);
    QVERIFY(exact.source == LookupSource::Exact);
    QCOMPARE(exact.config.key(), entry().config.key());
    p.fields[0].second = "40";  // rounds up to the tuned M=64: the description's bucket field
    QVERIFY(loaded.lookup(served, p).source == LookupSource::Bucket);
    // A registry without descriptions writes no "families".
    QVERIFY(!Registry("cpu", "x").to_json().contains("families"));
  }

  void registryFamilyFindsTheDescription() {
    const fs::path file = root() / "find" / "triton" / "mi300x.json";
    const std::vector<std::unique_ptr<Backend>> none;
    const std::string missing = input_error_of([&] { registry_family("triton_gemm", "triton", none, file); });
    QVERIFY2(contains(missing, "'triton' backend is not built into this ktune") &&
                 contains(missing, "there is no registry " + file.string()) &&
                 contains(missing, "--family-from RUN_DIR"),
             missing.c_str());
    const KernelFamily f = worker_family();
    Registry reg("triton", "mi300x");
    reg.set_family_description(f.name, describe_family(f, f.default_space));
    reg.save(file);
    QCOMPARE(registry_family("triton_gemm", "triton", none, file).bucket_field, std::string("M"));
    const std::string other = input_error_of([&] { registry_family("flash", "triton", none, file); });
    QVERIFY2(contains(other, "registry " + file.string() + " keeps no description of family 'flash'"), other.c_str());
  }

  void recordedFamilyComesFromTheRun() {
    const KernelFamily f = worker_family();
    RunMetadata md;
    md.run_name = "w";
    md.family = f.name;
    md.backend = "triton";
    md.ktune_version = "0.1.0";
    md.space = f.default_space;
    md.family_description = describe_family(f, f.default_space);
    const std::vector<std::unique_ptr<Backend>> none;
    { RunStore::create(root() / "runs" / "w", md); }
    QCOMPARE(RunStore::read_metadata(root() / "runs" / "w").family_description, md.family_description);
    QCOMPARE(recorded_family(root() / "runs" / "w", none).key_fields.size(), std::size_t(3));
    // A run that recorded none, of a backend this build lacks (runs made before descriptions).
    md.run_name = "old";
    md.family_description = nullptr;
    { RunStore::create(root() / "runs" / "old", md); }
    QVERIFY(!contains(read_text_file(root() / "runs" / "old" / "run_metadata.json"), "family_description"));
    const std::string err = input_error_of([&] { recorded_family(root() / "runs" / "old", none); });
    QVERIFY2(contains(err, "records no description") && contains(err, "through its worker"), err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestFamilyDescription)
#include "test_family_description.moc"
