// The versioned workload rules (ktune/workload_rules.h): a run records the version its inputs were
// made under and reads back 1 where it predates the record; each family says the version its
// inputs last changed in (the MoE families: 2), and carries it through the worker protocol; a
// resume of a run made under rules whose inputs differ from this ktune's is refused naming the
// run, both versions and what to do, and one whose family did not change (gemm) goes on.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ktune/backends/cpu.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/files.h"
#include "ktune/kernel_spec.h"
#include "ktune/run_store.h"
#include "ktune/worker_protocol.h"
#include "ktune/workload_rules.h"
#include "store_test_support.h"

using namespace ktune;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSource = fs::path(KTUNE_SOURCE_DIR);

KernelFamily spec_family(const fs::path& file) {
  return KernelSpec::load(kSource / file, cuda_spec_dialect()).family();
}

KernelFamily cpu_family(const std::string& name) { return make_cpu_backend()->family(name); }

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

RunMetadata run_of(const std::string& family, int workload_rules) {
  RunMetadata m;
  m.run_name = "old";
  m.family = family;
  m.backend = "cpu";
  m.workload_rules = workload_rules;
  return m;
}

}  // namespace

class TestWorkloadRules : public QObject {
  Q_OBJECT
 private slots:
  // New runs write this ktune's version; a run_metadata.json without one was made under 1; a
  // value that is no version is an error naming the field, not a guess.
  void metadataRecordsTheRules() {
    QTemporaryDir tmp;
    const fs::path dir = fs::path(tmp.path().toStdString()) / "run";
    RunMetadata m = run_of("gemm", kWorkloadRules);
    m.started_at = "2025-01-01T00:00:00Z";
    RunStore::create(dir, m);
    QCOMPARE(RunStore::read_metadata(dir).workload_rules, kWorkloadRules);
    json j = json::parse(read_text_file(dir / "run_metadata.json"));
    QCOMPARE(j["workload_rules"].get<int>(), 2);
    j.erase("workload_rules");
    write_file(dir / "run_metadata.json", j.dump(2));
    const RunMetadata old = RunStore::read_metadata(dir);
    QCOMPARE(old.workload_rules, 1);
    QCOMPARE(old.to_json()["workload_rules"].get<int>(), 1);  // kept as recorded, not made current
    for (const json& bad : {json(0), json("2"), json(2.5)}) {
      j["workload_rules"] = bad;
      write_file(dir / "run_metadata.json", j.dump(2));
      const std::string err = input_error_of([&] { RunStore::read_metadata(dir); });
      QVERIFY2(contains(err, "run_metadata.json: workload_rules"), err.c_str());
    }
  }

  // The families that draw a MoE routing changed in rules 2; the others never did.
  void eachFamilySaysWhenItsInputsChanged() {
    QCOMPARE(cpu_family("grouped_gemm").workload_rules_since, kMoeRoutingRules);
    QCOMPARE(spec_family("resources/kernels/cuda/grouped_gemm.json").workload_rules_since, kMoeRoutingRules);
    QCOMPARE(spec_family("bench/cuda/grouped_read.json").workload_rules_since, kMoeRoutingRules);
    QCOMPARE(cpu_family("gemm").workload_rules_since, 1);
    QCOMPARE(cpu_family("paged_attention").workload_rules_since, 1);
    QCOMPARE(spec_family("resources/kernels/cuda/gemm.json").workload_rules_since, 1);
  }

  void resumeRefusesRunsOfOtherInputs() {
    const KernelFamily moe = cpu_family("grouped_gemm"), gemm = cpu_family("gemm");
    const std::string old = input_error_of([&] { check_workload_rules(run_of("grouped_gemm", 1), "runs/old", moe); });
    QVERIFY2(
        contains(old,
                 "cannot resume runs/old: its trials were measured on inputs made under workload rules 1 (its "
                 "run_metadata.json records none: it predates them), and this ktune makes grouped_gemm's under "
                 "rules 2, where a MoE routing now comes from the workload seed, experts, tokens and topk alone") &&
            contains(old, "Start a new run, or resume it with the ktune that recorded it (one of workload rules 1)"),
        old.c_str());
    // A family whose inputs are the same under both goes on, as does a run of this ktune's rules.
    QCOMPARE(input_error_of([&] { check_workload_rules(run_of("gemm", 1), "runs/old", gemm); }), std::string());
    QCOMPARE(input_error_of([&] { check_workload_rules(run_of("grouped_gemm", 2), "runs/new", moe); }), std::string());
    // Rules newer than this ktune's: it cannot know what changed, whatever the family.
    const std::string newer = input_error_of([&] { check_workload_rules(run_of("gemm", 3), "runs/next", gemm); });
    QVERIFY2(contains(newer,
                      "cannot resume runs/next: its trials were measured on inputs made under workload rules "
                      "3, and this ktune knows rules up to 2 only") &&
                 contains(newer, "(one of workload rules 3)"),
             newer.c_str());
  }

  // A worker's family says it too (a run through `ktune worker` or the Triton worker is held to
  // the same rules); left out at 1, and a version this ktune does not know is refused.
  void theProtocolCarriesIt() {
    const json wire = worker::family_to_json(cpu_family("grouped_gemm"));
    QCOMPARE(wire["workload_rules_since"].get<int>(), 2);
    QCOMPARE(worker::family_from_json(wire, "cpu").family.workload_rules_since, 2);
    const json plain = worker::family_to_json(cpu_family("gemm"));
    QVERIFY(!plain.contains("workload_rules_since"));
    QCOMPARE(worker::family_from_json(plain, "cpu").family.workload_rules_since, 1);
    for (const json& bad : {json(0), json(kWorkloadRules + 1), json("2")}) {
      json j = wire;
      j["workload_rules_since"] = bad;
      try {
        worker::family_from_json(j, "cpu");
        QFAIL(("accepted workload_rules_since " + bad.dump()).c_str());
      } catch (const worker::ProtocolError& e) {
        QVERIFY2(contains(e.what(), "hello.families.grouped_gemm.workload_rules_since: " + bad.dump() +
                                        " is not a version of the workload rules this ktune knows (1 to 2)"),
                 e.what());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestWorkloadRules)
#include "test_workload_rules.moc"
