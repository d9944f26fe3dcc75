// Bad input never crashes and always names the file and the field: nesting deep enough to
// overflow the stack, numbers that do not fit, wrong types, directories given for files,
// impossible registry latencies, constraints that evaluate to NaN, spaces and shape lists too
// large to enumerate, and user spaces that do not fit the family. The inputs the fuzz targets
// (tests/fuzz) found are kept here too, as literals.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda_spec.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/json_read.h"
#include "ktune/kernel_family.h"
#include "ktune/kernel_spec.h"
#include "ktune/problem.h"
#include "ktune/registry.h"
#include "ktune/run_store.h"
#include "ktune/search_space.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

// 200,000 levels: far past what a recursive dump or copy survives on an 8 MiB stack.
std::string deep_array() { return std::string(200000, '[') + std::string(200000, ']'); }
std::string deep_object() {
  std::string s;
  for (int i = 0; i < 200000; ++i) s += "{\"a\":";
  return s + "1" + std::string(200000, '}');
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

const fs::path kSpecDir = fs::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda";

nlohmann::json gemm_spec() { return read_json_file(kSpecDir / "gemm.json", "kernel spec"); }

// The cpu gemm's parameters with one value each, plus `extra` members.
std::string cpu_gemm_space(const std::string& extra = "", const std::string& constraints = "[]") {
  return "{\"parameters\": {\"MR\": [6], \"NR\": [16], \"vec\": [4], \"MC\": [48], \"KC\": [64], \"NC\": [64], "
         "\"loop_order\": [0], \"threads\": [1]" +
         extra + "}, \"constraints\": " + constraints + "}";
}

KernelFamily family_of(const std::string& space_json) {
  KernelFamily f;
  f.name = "gemm";
  f.backend = "cpu";
  f.key_fields = {{"M", true, "", {}, ""}, {"N", true, "", {}, ""}, {"K", true, "", {}, ""}};
  f.bucket_field = "M";
  f.default_space = SearchSpace::from_json(nlohmann::json::parse(space_json));
  return f;
}

}  // namespace

class TestBadInput : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path root() const { return fs::path(tmp_.path().toStdString()); }

  // Loads `text` as each reader's file; returns the InputError (the test fails on a crash).
  std::string load(const std::string& reader, const std::string& text) {
    const fs::path dir = root() / reader;
    fs::create_directories(dir);
    if (reader == "registry") {
      write_file(dir / "r.json", text);
      return input_error_of([&] { Registry::load(dir / "r.json"); });
    }
    if (reader == "run metadata") {
      write_file(dir / "run_metadata.json", text);
      return input_error_of([&] { RunStore::read_metadata(dir); });
    }
    if (reader == "search space") {
      write_file(dir / "s.json", text);
      return input_error_of([&] { SearchSpace::load(dir / "s.json"); });
    }
    write_file(dir / "spec.json", text);
    return input_error_of([&] { KernelSpec::load(dir / "spec.json", cuda_spec_dialect()); });
  }

 private slots:
  void deepNestingIsRefusedNamingTheFile_data() {
    QTest::addColumn<QString>("reader");
    QTest::addColumn<QString>("file");
    // Valid JSON that puts the deep value where an error message quoted it whole.
    QTest::addColumn<QString>("prefix");
    QTest::addColumn<QString>("suffix");
    QTest::newRow("registry") << "registry"
                              << "r.json"
                              << "{\"ktune_registry\": 1, \"backend\": "
                              << "}";
    QTest::newRow("run metadata") << "run metadata"
                                  << "run_metadata.json"
                                  << "{\"ktune_run\": 1, \"run\": "
                                  << "}";
    QTest::newRow("search space") << "search space"
                                  << "s.json"
                                  << "{\"parameters\": {\"BM\": "
                                  << "}}";
    QTest::newRow("kernel spec") << "kernel spec"
                                 << "spec.json"
                                 << "{\"name\": "
                                 << "}";
  }
  void deepNestingIsRefusedNamingTheFile() {
    QFETCH(QString, reader);
    QFETCH(QString, file);
    QFETCH(QString, prefix);
    QFETCH(QString, suffix);
    for (const std::string& deep : {deep_array(), deep_object()}) {
      const std::string err = load(reader.toStdString(), prefix.toStdString() + deep + suffix.toStdString());
      QVERIFY2(contains(err, file.toStdString()) && contains(err, "nested deeper than 64"), err.c_str());
      QVERIFY2(err.size() < 400, err.c_str());
    }
  }

  void nestingUpToTheLimitParses() {
    const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
    QCOMPARE(parse_json(ok, "t").dump().size(), ok.size());
    const std::string too_deep = "[" + ok + "]";
    QVERIFY(contains(input_error_of([&] { parse_json(too_deep, "t"); }), "nested deeper"));
    QVERIFY(contains(input_error_of([&] { parse_ordered_json(too_deep, "t"); }), "nested deeper"));
  }

  void numberOverflowNamesTheFile() {
    const std::string err = load("search space", "{\"parameters\": {\"BM\": [1e400]}}");
    QVERIFY2(contains(err, "s.json") && contains(err, "number overflow parsing '1e400'") && !contains(err, "[json."),
             err.c_str());
  }

  void wrongTypesNameTheField() {
    std::string err = load("search space", "{\"parameters\": {\"BM\": [16, \"x\"]}}");
    QVERIFY2(contains(err, "s.json") && contains(err, "parameters.BM[1]: expected an integer, got \"x\""), err.c_str());
    err = load("search space", "{\"parameters\": {\"BM\": {\"from\": 1, \"to\": true}}}");
    QVERIFY2(contains(err, "parameters.BM.to: expected an integer"), err.c_str());
    err = load("search space", "{\"parameters\": [{\"name\": \"BM\", \"values\": [1], \"description\": 7}]}");
    QVERIFY2(contains(err, "parameters[0].description: expected a string"), err.c_str());
  }

  // A spec's boolean given as a string was nlohmann's type_error.302 (exit 1); a field of each
  // part of the spec (family, compile, arguments, launches, reference) names its path.
  void kernelSpecFieldsAreNamed_data() {
    QTest::addColumn<QString>("pointer");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("needle");
    QTest::newRow("key field flag") << "/key_fields/3/numeric"
                                    << "\"yes\""
                                    << "key_fields[3].numeric: expected true or false";
    QTest::newRow("compile flag") << "/compile/params_as_defines"
                                  << "\"no\""
                                  << "compile.params_as_defines: expected true or false";
    QTest::newRow("argument name") << "/arguments/0/name"
                                   << "[1]"
                                   << "arguments[0].name: expected a string";
    QTest::newRow("init bounds") << "/arguments/0/init"
                                 << "{\"uniform\": [\"a\", 1]}"
                                 << "arguments[0].init.uniform[0]: expected a number";
    QTest::newRow("swizzle") << "/arguments/5/swizzle"
                             << "\"128\""
                             << "arguments[5].swizzle: expected an integer";
    QTest::newRow("grid") << "/launches/0/grid"
                          << "{}"
                          << "launches[0].grid: expected an array";
    QTest::newRow("reference") << "/reference/kind"
                               << "false"
                               << "reference.kind: expected a string";
    QTest::newRow("space value") << "/space/parameters/0/values/1"
                                 << "\"32\""
                                 << "space: parameters[0].values[1]: expected an integer";
  }
  void kernelSpecFieldsAreNamed() {
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, needle);
    nlohmann::json j = gemm_spec();
    j[nlohmann::json::json_pointer(pointer.toStdString())] = nlohmann::json::parse(value.toStdString());
    const std::string err =
        input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "kernel spec edited.json"); });
    QVERIFY2(contains(err, "kernel spec edited.json: " + needle.toStdString()), err.c_str());
  }

  // The tensor-parallel splits and shape rules of a spec (attention's, on gemm's fields here).
  void kernelSpecHeadsAndShapeRules() {
    nlohmann::json j = gemm_spec();
    j["tp_head_fields"] = nlohmann::json::parse(R"(["N", {"name": "K", "at_least_one": true}])");
    j["shape_rules"] = nlohmann::json::parse(R"([{"expr": "mod(N, K) == 0", "description": "N in whole K groups"}])");
    const KernelSpec s = KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json");
    const TpSplit* heads = s.family().tp_split(TpSplitDim::Heads);
    QVERIFY(heads && heads->fields.size() == 2 && heads->fields[1].at_least_one && !heads->fields[0].at_least_one);
    QVERIFY(s.family().tp_split(TpSplitDim::Out) && s.family().tp_split(TpSplitDim::In));
    QVERIFY(contains(input_error_of([&] { expand_shape(s.family(), "M=1 N=96 K=64"); }),
                     "N=96, K=64: N in whole K groups"));
    j["shape_rules"][0]["expr"] = "mod(N, BK) == 0";
    QVERIFY(contains(input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); }),
                     "shape_rules[0].expr: 'BK' is not a key field"));
    j.erase("shape_rules");
    j["tp_head_fields"][0] = "dtype";
    QVERIFY(contains(input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); }),
                     "'dtype' must be a numeric key field"));
  }

  void builtInSpecsStillLoad() {
    for (const char* name : {"gemm.json", "qmatmul.json"}) {
      const KernelSpec s = KernelSpec::load(kSpecDir / name, cuda_spec_dialect());
      QVERIFY(!s.family().default_space.parameters().empty());
      QVERIFY(!s.launches().empty());
    }
  }

  // Each backend's dialect decides what beyond the shared format a spec may use: a CUDA spec read
  // as a HIP one is refused naming the culprit, not half-accepted.
  void dialectsRefuseWhatTheirBackendLacks() {
    nlohmann::json j = gemm_spec();
    std::string err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, hip_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err, "g.json: arguments[") && contains(err, "the hip backend has no tensor maps"), err.c_str());
    j["backend"] = "cuda";
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, hip_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err, "backend: 'cuda' is not this backend: load the spec with --backend cuda"), err.c_str());
    j = gemm_spec();
    j["reference"]["kind"] = "device_gemm";
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); });
    QVERIFY2(
        contains(err,
                 "reference.kind: 'device_gemm' is not one of none, config, kernel, cublas_gemm (the cuda backend's)"),
        err.c_str());
    j = gemm_spec();
    j["reference"]["b_layout"] = "mk";
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err, "reference.b_layout: expected one of \"kn\", \"nk\""), err.c_str());
    // A "baseline" names a library call of the dialect, with the fields its kind needs.
    j = gemm_spec();
    j["baseline"] = {{"kind", "cublaslt_block_scaled"},
                     {"when", "M > 0"},
                     {"a", "A"},
                     {"b", "B"},
                     {"a_scale", "A"},
                     {"b_scale", "B"},
                     {"c", "C"},
                     {"m", "M"},
                     {"n", "N"},
                     {"k", "K"}};
    KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json");  // well-formed: loads
    j["baseline"]["kind"] = "rocblas";
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err,
                      "baseline.kind: 'rocblas' is not a baseline of the cuda backend (it has "
                      "cublaslt_block_scaled)"),
             err.c_str());
    j["baseline"]["kind"] = "cublaslt_block_scaled";
    j["baseline"].erase("b_scale");
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err, "cublaslt_block_scaled needs \"b_scale\""), err.c_str());
    j["baseline"]["b_scale"] = "scales";
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err, "baseline.b_scale: 'scales' is not a declared argument"), err.c_str());
    j["baseline"]["b_scale"] = "B";
    j["baseline"]["when"] = "nope > 1";
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err, "baseline.when: 'nope' in \"nope > 1\" is not a key field"), err.c_str());
    j = gemm_spec();
    j["launches"][0]["block"][0] = "wavefront_size*4";
    err = input_error_of([&] { KernelSpec::from_json(j, kSpecDir, cuda_spec_dialect(), "g.json"); });
    QVERIFY2(contains(err, "'wavefront_size' in \"wavefront_size*4\" is not a key field"), err.c_str());
  }

  void directoryForAFileIsNamed() {
    const fs::path dir = root() / "adir.json";
    fs::create_directories(dir);
    for (const std::string& err : {input_error_of([&] { SearchSpace::load(dir); }),
                                   input_error_of([&] { KernelSpec::load(dir, cuda_spec_dialect()); }),
                                   input_error_of([&] { Registry::load(dir); })})
      QVERIFY2(contains(err, "adir.json") && contains(err, "is a directory"), err.c_str());
    fs::create_directories(root() / "run" / "run_metadata.json");
    const std::string err = input_error_of([&] { RunStore::read_metadata(root() / "run"); });
    QVERIFY2(contains(err, "run_metadata.json") && contains(err, "is a directory"), err.c_str());
  }

  void impossibleRegistryLatenciesNameTheKey_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value");
    QTest::newRow("negative median") << "latency_median_ns"
                                     << "-5";
    QTest::newRow("zero median") << "latency_median_ns"
                                 << "0";
    QTest::newRow("zero mean") << "latency_avg_ns"
                               << "0";
    QTest::newRow("negative std") << "latency_std_ns"
                                  << "-1";
    QTest::newRow("negative compile time") << "compile_time_s"
                                           << "-0.5";
  }
  void impossibleRegistryLatenciesNameTheKey() {
    QFETCH(QString, field);
    QFETCH(QString, value);
    nlohmann::json stats = {
        {"latency_avg_ns", 1000}, {"latency_median_ns", 990}, {"latency_std_ns", 3}, {"compile_time_s", 0.1}};
    stats[field.toStdString()] = nlohmann::json::parse(value.toStdString());
    const nlohmann::json reg = {{"ktune_registry", 1},
                                {"backend", "cpu"},
                                {"device", "d"},
                                {"entries",
                                 {{"gemm",
                                   {{"M=16,N=8,K=8",
                                     {{"config", {{"BM", 16}}},
                                      {"stats", stats},
                                      {"metadata",
                                       {{"benchmarking_method", "amortized"},
                                        {"samples_ns", {990}},
                                        {"run", "r"},
                                        {"tuned_at", "t"},
                                        {"ktune_version", "0.1.0"}}}}}}}}}};
    const std::string err = load("registry", reg.dump());
    QVERIFY2(contains(err, "r.json") && contains(err, "entries.gemm[\"M=16,N=8,K=8\"].stats." + field.toStdString()) &&
                 contains(err, value.toStdString()),
             err.c_str());
  }

  void constraintThatIsNotANumberIsAnError_data() {
    QTest::addColumn<QString>("expr");
    QTest::addColumn<QString>("what");
    QTest::newRow("0/0") << "(BM - BM) / (BM - BM)"
                         << "division by zero";
    QTest::newRow("0/0 inside a comparison") << "(BM - BM) / (BM - BM) == 0"
                                             << "division by zero";
    QTest::newRow("x/0 inside a logical or") << "BN > 1 || BM / (BN - BN) > 4"
                                             << "division by zero";
    QTest::newRow("log2(0) inside a comparison") << "log2(BM - BM) < 4"
                                                 << "infinity";
    QTest::newRow("sqrt of a negative") << "sqrt(BN - BM)"
                                        << "NaN";
    QTest::newRow("mod by zero") << "mod(BM, BN - BN) == 0"
                                 << "mod by zero";
    QTest::newRow("ceil_div by zero") << "ceil_div(BM, BN - BN) > 1"
                                      << "ceil_div by zero";
    QTest::newRow("overflow") << "BM ^ 1000 > 1"
                              << "infinity";
  }
  void constraintThatIsNotANumberIsAnError() {
    QFETCH(QString, expr);
    QFETCH(QString, what);
    const SearchSpace s({{"BM", {16, 32}, ""}, {"BN", {8}, ""}}, {{expr.toStdString(), ""}});
    for (const std::string& err :
         {input_error_of([&] { s.enumerate({}); }), input_error_of([&] { s.prune_report({}); }), input_error_of([&] {
            s.violated(Config({{"BM", 16}, {"BN", 8}}), {});
          })})
      QVERIFY2(contains(err, expr.toStdString()) && contains(err, what.toStdString()) && contains(err, "BM=16,BN=8"),
               err.c_str());
  }

  // is_pow2 of a number no integer holds is false, not undefined (UBSan checks; the fuzzer found it).
  void isPow2OfHugeValuesIsFalse() {
    const SearchSpace s({{"BM", {16, 32}, ""}, {"BN", {8}, ""}},
                        {{"is_pow2(BM * 1e300) == 0 && is_pow2(-BM) == 0 && is_pow2(BM / 3) == 0 && is_pow2(BM)", ""}});
    QCOMPARE(s.enumerate({}).size(), std::size_t(2));
  }

  // The guard the error message recommends really guards: only the branch taken is evaluated.
  void conditionalGuardsADivisionByZero() {
    const SearchSpace s({{"BM", {0, 16, 32}, ""}, {"BN", {8}, ""}},
                        {{"BM > 0 ? mod(BM, BN) == 0 && BN / BM < 1 : 0", ""}});
    QCOMPARE(s.enumerate({}).size(), std::size_t(2));
    const std::string err = input_error_of([&] {
      SearchSpace({{"BM", {0, 16}, ""}}, {{"BM > 0 && 16 / BM > 1", ""}}).enumerate({});
    });
    QVERIFY2(contains(err, "?") && contains(err, "division by zero"), err.c_str());
  }

  void spaceTooLargeIsRefusedBeforeEnumerating() {
    std::vector<ParamValue> many(100000);
    for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<ParamValue>(i + 1);
    // 2e10 configs: refused from the parameters' sizes. Enumerating them first would not end before
    // Qt Test's watchdog (QTEST_FUNCTION_TIMEOUT) fails the test, on any host; no timing is asserted.
    const SearchSpace s({{"A", many, ""}, {"B", many, ""}, {"C", {1, 2}, ""}}, {});
    const std::string err = input_error_of([&] { s.prune_report({}); });
    QVERIFY2(contains(err, "10000000") && contains(err, "A (100000 values), B (100000 values)"), err.c_str());
    QVERIFY(input_error_of([&] { s.enumerate({}); }) == err);
    // At the cap it is still enumerated.
    std::vector<ParamValue> thousand(many.begin(), many.begin() + 1000);
    QCOMPARE(SearchSpace({{"A", thousand, ""}, {"B", thousand, ""}}, {}).prune_report({}).total,
             std::uint64_t(1000000));
  }

  void rangesStopAtTheCapAndAtOverflow() {
    std::string err = input_error_of([] {
      SearchSpace::from_json(nlohmann::json::parse(R"({"parameters": {"X": {"from": 1, "to": 1000000000}}})"));
    });
    QVERIFY2(contains(err, "parameters.X") && contains(err, "more than 10000000 values"), err.c_str());
    // x * mul and x + step would pass INT64_MAX: the range ends instead (UBSan checks no overflow happens).
    const auto mul = SearchSpace::from_json(
        nlohmann::json::parse(R"({"parameters": {"X": {"from": 1, "to": 9223372036854775807, "mul": 2}}})"));
    QCOMPARE(mul.parameters()[0].values.size(), std::size_t(63));
    const auto step = SearchSpace::from_json(nlohmann::json::parse(
        R"({"parameters": {"X": {"from": 9223372036854775800, "to": 9223372036854775807, "step": 5}}})"));
    QCOMPARE(step.parameters()[0].values.size(), std::size_t(2));
  }

  void shapeListTooLongIsRefusedAtOnce() {
    const KernelFamily f = family_of(cpu_gemm_space());
    std::string m = "M=1";
    for (int i = 2; i <= 100000; ++i) m += "," + std::to_string(i);
    // 1e10 problems with N's list as long: refused from the lists' lengths (expanding them first would
    // run into Qt Test's watchdog).
    const std::string err = input_error_of([&] { expand_shape(f, m + " N=" + m.substr(2) + " K=64"); });
    QVERIFY2(contains(err, "more than 10000 problems"), err.c_str());
    QVERIFY2(err.size() < 400, err.c_str());  // quotes the start of the shape, not its 600 kB
    QCOMPARE(expand_shape(f, "M=1,2,3,4,5,6,7,8,9,10 N=1,2,3,4,5,6,7,8,9,10 K=1,2,3,4,5,6,7,8,9,10").size(),
             std::size_t(1000));
  }

  void userSpaceMustFitTheFamily() {
    const KernelFamily f = family_of(cpu_gemm_space());
    f.check_space(f.default_space);
    std::string err = input_error_of([&] { f.check_space(family_of(cpu_gemm_space(", \"BM\": [16]")).default_space); });
    QVERIFY2(contains(err, "'BM' is not a parameter of gemm on cpu") && contains(err, "KC, MC, MR"), err.c_str());
    err = input_error_of([&] { f.check_space(SearchSpace({{"MR", {6}, ""}}, {})); });
    QVERIFY2(contains(err, "parameter 'KC' of gemm is missing"), err.c_str());
  }

  void allPrunedIsAnError() {
    const SearchSpace s({{"BM", {16, 32}, ""}}, {{"BM > 64", ""}});
    const std::string err = input_error_of([&] { require_valid_configs(s.prune_report({}), "gemm M=1"); });
    QVERIFY2(contains(err, "gemm M=1") && contains(err, "all 2 configs are pruned") && contains(err, "BM > 64"),
             err.c_str());
    QVERIFY(input_error_of([&] {
              require_valid_configs(SearchSpace({{"BM", {16}, ""}}, {}).prune_report({}), "x");
            }).empty());
  }

  void errorsQuoteShortExcerpts() {
    nlohmann::json big = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i) big.push_back(i);
    QCOMPARE(json_excerpt(big), std::string("[100000 values]"));
    QVERIFY(json_excerpt(nlohmann::json(std::string(10000, 'x'))).size() <= 60);
    const std::string err =
        load("registry", "{\"ktune_registry\": 1, \"device\": \"d\", \"backend\": " + big.dump() + "}");
    QVERIFY2(err.size() < 400 && contains(err, "backend: expected a string"), err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestBadInput)
#include "test_bad_input.moc"
