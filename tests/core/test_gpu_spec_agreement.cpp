// The built-in GPU families are written once per backend (resources/kernels/cuda, .../hip): what
// a user and the registry see of a family must not depend on the backend, so every family both
// backends ship agrees on its problem key, its FLOP and byte counts, its registry bucket and its
// tensor-parallel splits. Only the specs' parsers run here: no toolkit, no GPU.
#include <QtTest>
#include <filesystem>
#include <map>

#include "ktune/backends/cuda_spec.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/kernel_spec.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

const fs::path kKernels = fs::path(KTUNE_SOURCE_DIR) / "resources" / "kernels";

// The built-in families of one backend: its folder's specs (examples/ holds users' kernels).
std::map<std::string, KernelFamily> builtin(const std::string& backend, const SpecDialect& dialect) {
  std::map<std::string, KernelFamily> out;
  for (const auto& e : fs::directory_iterator(kKernels / backend))
    if (e.path().extension() == ".json") {
      const KernelSpec s = KernelSpec::load(e.path(), dialect);
      out.emplace(s.family().name, s.family());
    }
  return out;
}

QString keys(const KernelFamily& f) {
  QStringList out;
  for (const auto& k : f.key_fields) {
    QStringList choices;
    for (const auto& c : k.choices) choices << QString::fromStdString(c);
    out << QString("%1%2=%3{%4}")
               .arg(QString::fromStdString(k.name), k.numeric ? "#" : "$", QString::fromStdString(k.default_value),
                    choices.join(","));
  }
  return out.join(" ");
}

QString tp_splits(const KernelFamily& f) {
  QStringList out;
  for (const auto& s : f.tp_splits) {
    QStringList fields;
    for (const auto& t : s.fields) fields << QString::fromStdString(t.name) + (t.at_least_one ? "+" : "");
    out << QString("%1:%2").arg(static_cast<int>(s.dim)).arg(fields.join(","));
  }
  return out.join(" ");
}

}  // namespace

class TestGpuSpecAgreement : public QObject {
  Q_OBJECT
 private slots:
  void familiesAgreeBetweenBackends() {
    const auto cuda = builtin("cuda", cuda_spec_dialect());
    const auto hip = builtin("hip", hip_spec_dialect());
    // The families the issue names are on both; a spec that stops loading fails above.
    for (const char* name : {"gemm", "qmatmul"}) {
      QVERIFY2(cuda.count(name), name);
      QVERIFY2(hip.count(name), name);
    }
    for (const auto& [name, c] : cuda) {
      const auto it = hip.find(name);
      if (it == hip.end()) continue;
      const KernelFamily& h = it->second;
      const QString n = QString::fromStdString(name);
      QCOMPARE(n + " keys " + keys(h), n + " keys " + keys(c));
      QCOMPARE(n + " flops " + QString::fromStdString(h.flops_expr),
               n + " flops " + QString::fromStdString(c.flops_expr));
      QCOMPARE(n + " bytes " + QString::fromStdString(h.bytes_expr),
               n + " bytes " + QString::fromStdString(c.bytes_expr));
      QCOMPARE(n + " bucket " + QString::fromStdString(h.bucket_field),
               n + " bucket " + QString::fromStdString(c.bucket_field));
      QCOMPARE(n + " tp " + tp_splits(h), n + " tp " + tp_splits(c));
      QCOMPARE(h.shape_rules.size(), c.shape_rules.size());
    }
  }
};

QTEST_APPLESS_MAIN(TestGpuSpecAgreement)
#include "test_gpu_spec_agreement.moc"
