// What a spec's check covers, without a GPU: an output the kernel leaves unwritten in places (Kernel
// Tuner's stencil never writes the 12,284 border cells of its 4096 x 2048 grid) is reported as never
// written, not as "got -nan, want -nan"; "region" (a box of the output) and "ignore_unwritten"
// (what the reference leaves as poison) keep those cells out of the check, while a config that
// misses a cell inside still fails; and the parser refuses scopes that cannot mean anything.
#include <QtTest>
#include <cstring>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda_spec.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "store_test_support.h"

using namespace ktune;

namespace {

constexpr std::size_t kW = 4096, kH = 2048;

// A stencil's output: every interior cell written (its value i), the border left as poison.
std::vector<float> stencil_output(std::size_t w, std::size_t h) {
  std::vector<float> out(w * h);
  std::memset(out.data(), 0xff, out.size() * sizeof(float));
  for (std::size_t y = 1; y + 1 < h; ++y)
    for (std::size_t x = 1; x + 1 < w; ++x) out[y * w + x] = static_cast<float>(y * w + x);
  return out;
}

std::vector<double> as_reference(const std::vector<float>& out) { return {out.begin(), out.end()}; }

nlohmann::json stencil_spec() {
  return nlohmann::json::parse(R"json({
    "name": "stencil", "source": "k.cu",
    "key_fields": [{"name": "nx", "default": 4096}, {"name": "ny", "default": 2048}],
    "space": {"parameters": {"block_size_x": [32, 64], "block_size_y": [1, 2]}},
    "arguments": [{"name": "x_new", "buffer": "f32", "count": "nx*ny", "role": "output"},
                  {"name": "x_old", "buffer": "f32", "count": "nx*ny"}],
    "launches": [{"entry": "stencil_kernel", "grid": ["ceil_div(nx, block_size_x)", "ceil_div(ny, block_size_y)"],
                  "block": ["block_size_x", "block_size_y"], "args": ["x_new", "x_old"]}],
    "reference": {"kind": "config", "config": {"block_size_x": 32, "block_size_y": 1}},
    "check": {"region": {"dims": ["nx", "ny"], "begin": [1, 1], "end": ["nx-1", "ny-1"]}}
  })json");
}

KernelSpec spec(const nlohmann::json& j) {
  static const std::map<std::string, std::string> files{{"k.cu", "// the kernel\n"}};
  return KernelSpec::from_json(j, ".", cuda_spec_dialect(), "stencil.json", &files);
}

Problem problem(std::size_t w, std::size_t h) {
  Problem p;
  p.family = "stencil";
  p.fields = {{"nx", std::to_string(w)}, {"ny", std::to_string(h)}};
  return p;
}

std::string parse_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = stencil_spec();
  edit(j);
  return input_error_of([&] { spec(j); });
}

Tolerance tight() {
  Tolerance t;
  t.atol = 1e-6;
  t.rtol = 0;
  return t;
}

}  // namespace

class TestSpecCheckScope : public QObject {
  Q_OBJECT

 private slots:
  // The whole output compared: the border is named as never written, with its count and place.
  void unwrittenBorderIsToldApart() {
    const auto got = stencil_output(kW, kH);
    auto want = as_reference(got);
    for (std::size_t i = 0; i < want.size(); ++i)
      if (std::isnan(want[i])) want[i] = 0.5;  // a reference that writes everything
    const Comparison c = compare(got.data(), ElemType::F32, want, tight());
    QCOMPARE(c.mismatches, std::size_t{12284});
    QCOMPARE(c.unwritten, std::size_t{12284});
    QCOMPARE(c.first_unwritten, std::size_t{0});
    const std::string m = mismatch_message(c, want.size(), tight(), "the reference");
    QVERIFY2(contains(m, "12,284 elements were never written (still the NaN poison, first at index 0)"), m.c_str());
    QVERIFY2(contains(m, "\"region\" or \"ignore_unwritten\": true"), m.c_str());
    // A wrong value the kernel did write is not counted as unwritten.
    auto wrong = got;
    wrong[kW + 1] = -1;
    const Comparison w = compare(wrong.data(), ElemType::F32, want, tight());
    QCOMPARE(w.mismatches, std::size_t{12285});
    QCOMPARE(w.unwritten, std::size_t{12284});
    // A zero-initialised output cannot tell: nothing is called unwritten.
    QCOMPARE(compare(got.data(), ElemType::F32, want, tight(), {nullptr, false}).unwritten, std::size_t{0});
  }

  void regionLeavesTheBorderOut() {
    const KernelSpec s = spec(stencil_spec());
    const auto mask = s.region_elements(problem(kW, kH), kW * kH);
    QCOMPARE(static_cast<std::size_t>(std::count(mask.begin(), mask.end(), 1)), (kW - 2) * (kH - 2));
    QCOMPARE(mask[0], std::uint8_t{0});
    QCOMPARE(mask[kW + 1], std::uint8_t{1});
    QCOMPARE(mask[2 * kW - 1], std::uint8_t{0});  // the last column
    const auto got = stencil_output(kW, kH);
    const auto want = as_reference(got);  // the reference leaves the same border
    const Comparison c = compare(got.data(), ElemType::F32, want, tight(), {&mask, true});
    QCOMPARE(c.mismatches, std::size_t{0});
    QCOMPARE(c.compared, (kW - 2) * (kH - 2));
    // Without the region, the same output fails on every border cell.
    QCOMPARE(compare(got.data(), ElemType::F32, want, tight()).mismatches, std::size_t{12284});
    // A cell inside that a config misses still fails, as never written.
    auto missed = got;
    std::memset(&missed[5 * kW + 7], 0xff, sizeof(float));
    const Comparison m = compare(missed.data(), ElemType::F32, want, tight(), {&mask, true});
    QCOMPARE(m.mismatches, std::size_t{1});
    QCOMPARE(m.unwritten, std::size_t{1});
    QCOMPARE(m.first_unwritten, 5 * kW + 7);
    const std::string text = mismatch_message(m, want.size(), tight(), "the reference");
    QVERIFY2(contains(text, "1 of 8376324 elements") && contains(text, "12,284 not checked") &&
                 contains(text, "1 element was never written"),
             text.c_str());
  }

  // A region whose box does not match the output says so, naming the spec.
  void regionMustFitTheOutput() {
    const KernelSpec s = spec(stencil_spec());
    const std::string e = input_error_of([&] { s.region_elements(problem(64, 32), 64 * 31); });
    QVERIFY2(contains(e, "stencil.json: check.region for ") &&
                 contains(e, ": the region's dims hold 2048 elements, the output 1984"),
             e.c_str());
    nlohmann::json j = stencil_spec();
    j["check"]["region"]["end"] = {"nx+1", "ny-1"};
    QVERIFY(contains(input_error_of([&] { spec(j).region_elements(problem(64, 32), 64 * 32); }),
                     "dim 0 runs [1, 65), outside [0, 64)"));
  }

  // ignore_unwritten: the reference's own poison cells leave the check, wherever they are.
  void referenceUnwrittenElementsAreSkipped() {
    const auto ref = stencil_output(kW, kH);
    std::vector<std::uint8_t> compared;
    drop_unwritten(compared, ref.data(), ElemType::F32, ref.size());
    QCOMPARE(static_cast<std::size_t>(std::count(compared.begin(), compared.end(), 0)), std::size_t{12284});
    const auto want = as_reference(ref);
    const auto got = stencil_output(kW, kH);
    QCOMPARE(compare(got.data(), ElemType::F32, want, tight(), {&compared, true}).mismatches, std::size_t{0});
    // With a region too, both narrow it; sizes that differ are refused.
    std::vector<std::uint8_t> small(10, 1);
    QVERIFY(contains(input_error_of([&] { drop_unwritten(small, ref.data(), ElemType::F32, ref.size()); }),
                     "the reference has 8388608 elements, the check's region 10"));
    // f16 and integer outputs: poison is every byte 0xff.
    const std::uint16_t h[2] = {0xffff, 0x3c00};
    QVERIFY(poisoned(h, ElemType::F16, 0) && !poisoned(h, ElemType::F16, 1));
    const std::int32_t ints[2] = {-1, 1};
    QVERIFY(poisoned(ints, ElemType::I32, 0) && !poisoned(ints, ElemType::I32, 1));
  }

  void parsesTheScope() {
    nlohmann::json j = stencil_spec();
    j["check"]["ignore_unwritten"] = true;
    const KernelSpec s = spec(j);
    QVERIFY(s.check().ignore_unwritten);
    QVERIFY(s.check().region && s.check().region->dims.size() == 2 && s.check().region->end[1] == "ny-1");
    QVERIFY(!spec(stencil_spec()).check().ignore_unwritten);
  }

  void refusesScopesThatMeanNothing() {
    QVERIFY(contains(parse_error([](auto& j) { j["check"]["reduce"] = "sum"; }),
                     "check.region: a reduced check compares one number"));
    QVERIFY(contains(parse_error([](auto& j) {
                       j["check"] = {{"reduce", "max"}, {"ignore_unwritten", true}};
                     }),
                     "check.ignore_unwritten: a reduced check compares one number"));
    QVERIFY(contains(parse_error([](auto& j) {
                       j["check"] = {{"ignore_unwritten", true}};
                       j.erase("reference");
                     }),
                     "needs a reference of kind \"config\" or \"kernel\""));
    QVERIFY(contains(parse_error([](auto& j) {
                       j["check"] = {{"ignore_unwritten", true}};
                       j["arguments"][0]["init"] = "zero";
                     }),
                     "needs the output poisoned"));
    QVERIFY(contains(parse_error([](auto& j) { j["check"]["region"]["begin"] = {1}; }),
                     "must have one entry per dim each"));
    QVERIFY(contains(parse_error([](auto& j) { j["check"]["region"].erase("end"); }), "needs \"end\""));
    QVERIFY(contains(parse_error([](auto& j) { j["check"]["region"]["end"][0] = "width-1"; }),
                     "check.region: 'width' in \"width-1\" is not a key field"));
  }
};

QTEST_GUILESS_MAIN(TestSpecCheckScope)
#include "test_spec_check_scope.moc"
