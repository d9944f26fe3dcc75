// An input's "init" chosen by a text key field ({"field": "q", "map": {value: init}}): each
// problem's data is drawn with its value's entry (int8 codes over [-127, 127] for one, e4m3 codes
// for another, scales of different ranges), seeded like every generated input; and the parser's
// refusals, each naming the culprit: a numeric or unknown field, a value that is not a choice, a
// choice without an entry, an entry that is not drawn data (a file, another field), an e4m3 entry
// on a buffer that is not 8-bit, an output chosen by a field.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda_spec.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/spec_inputs.h"
#include "store_test_support.h"

using namespace ktune;

namespace {

nlohmann::json codes_spec() {
  return nlohmann::json::parse(R"json({
    "name": "codes", "source": "k.cu",
    "key_fields": [{"name": "n"}, {"name": "q", "numeric": false, "default": "fp8", "choices": ["fp8", "int8"]}],
    "space": {"parameters": {"BLOCK": [64]}},
    "arguments": [
      {"name": "codes", "buffer": "i8", "count": "n",
       "init": {"field": "q", "map": {"fp8": {"e4m3": [-448, 448]}, "int8": {"uniform": [-127, 127]}}}},
      {"name": "scales", "buffer": "f32", "count": "n",
       "init": {"field": "q", "map": {"fp8": {"uniform": [1, 2]}, "int8": {"uniform": [10, 20]}}}},
      {"name": "out", "buffer": "f32", "count": "n", "role": "output"}
    ],
    "launches": [{"entry": "k", "grid": ["n"], "block": ["BLOCK"], "args": ["codes", "scales", "out"]}]
  })json");
}

KernelSpec spec(const nlohmann::json& j) {
  static const std::map<std::string, std::string> files{{"k.cu", "// the kernel\n"}};
  return KernelSpec::from_json(j, ".", cuda_spec_dialect(), "codes.json", &files);
}

Problem problem(long n, const std::string& q) {
  Problem p;
  p.family = "codes";
  p.fields = {{"n", std::to_string(n)}, {"q", q}};
  return p;
}

std::string parse_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = codes_spec();
  edit(j);
  return input_error_of([&] { spec(j); });
}

// The smallest and largest of `data`'s f32 elements.
std::pair<float, float> range(const HostInput& in) {
  float lo = 1e30f, hi = -1e30f;
  for (std::size_t i = 0; i < in.data.size() / 4; ++i) {
    lo = std::min(lo, static_cast<float>(load_elem(in.data.data(), ElemType::F32, i)));
    hi = std::max(hi, static_cast<float>(load_elem(in.data.data(), ElemType::F32, i)));
  }
  return {lo, hi};
}

}  // namespace

class TestSpecFieldInit : public QObject {
  Q_OBJECT
 private slots:
  void eachProblemDrawsWithItsValuesEntry() {
    const KernelSpec s = spec(codes_spec());
    const SpecInputs int8 = generate_spec_inputs(s, problem(20000, "int8"), {}, 7);
    int lo = 0, hi = 0;
    for (const unsigned char c : int8.inputs.at("codes").data) {
      lo = std::min(lo, int(static_cast<signed char>(c)));
      hi = std::max(hi, int(static_cast<signed char>(c)));
    }
    QCOMPARE(lo, -127);  // every integer of the range is drawn at 20000 draws; -128 never
    QCOMPARE(hi, 127);
    const auto [slo, shi] = range(int8.inputs.at("scales"));
    QVERIFY(slo >= 10 && shi <= 20 && shi - slo > 9);

    const SpecInputs fp8 = generate_spec_inputs(s, problem(20000, "fp8"), {}, 7);
    float amax = 0;
    for (const unsigned char c : fp8.inputs.at("codes").data) {
      QVERIFY2((c & 0x7f) != 0x7f, "a NaN code");
      amax = std::max(amax, std::fabs(e4m3_to_f32(c)));
    }
    QVERIFY(amax >= 400);
    const auto [flo, fhi] = range(fp8.inputs.at("scales"));
    QVERIFY(flo >= 1 && fhi <= 2);

    QVERIFY(generate_spec_inputs(s, problem(20000, "int8"), {}, 7).inputs.at("codes").data ==
            int8.inputs.at("codes").data);
    QVERIFY(generate_spec_inputs(s, problem(20000, "int8"), {}, 8).inputs.at("codes").data !=
            int8.inputs.at("codes").data);
  }

  void parserRefusesWhatItCannotDraw() {
    const auto refused = [](const std::function<void(nlohmann::json&)>& edit,
                            std::initializer_list<const char*> parts) {
      const std::string e = parse_error(edit);
      for (const char* part : parts) QVERIFY2(contains(e, part), (std::string(part) + " not in: " + e).c_str());
    };
    refused([](auto& j) { j["arguments"][0]["init"]["field"] = "n"; }, {"'n' is not a text key field"});
    refused([](auto& j) { j["arguments"][0]["init"]["field"] = "dtype"; }, {"'dtype' is not a text key field"});
    refused(
        [](auto& j) {
          j["arguments"][0]["init"]["map"]["int4"] = {{"uniform", {-7, 7}}};
        },
        {"'int4' is not a choice of q"});
    refused([](auto& j) { j["arguments"][0]["init"]["map"].erase("int8"); }, {"no entry for q=int8"});
    refused([](auto& j) { j["arguments"][0]["init"].erase("map"); }, {"missing \"map\""});
    refused(
        [](auto& j) {
          j["arguments"][0]["init"]["map"]["int8"] = {{"file", "codes.npy"}};
        },
        {"arguments[0].init.map.int8", "drawn data"});
    refused([](auto& j) { j["arguments"][0]["init"]["map"]["int8"] = j["arguments"][0]["init"]; }, {"drawn data"});
    refused(
        [](auto& j) {
          j["arguments"][1]["init"]["map"]["fp8"] = {{"e4m3", {-1, 1}}};
        },
        {"'scales'", "\"u8\" or \"i8\""});
    refused([](auto& j) { j["arguments"][0]["init"]["typo"] = 1; }, {"unknown key"});
    refused([](auto& j) { j["arguments"][2]["init"] = j["arguments"][0]["init"]; }, {"\"poison\""});
  }
};

QTEST_GUILESS_MAIN(TestSpecFieldInit)
#include "test_spec_field_init.moc"
