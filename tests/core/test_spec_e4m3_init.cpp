// The "e4m3" init of a kernel spec's 8-bit buffers: fp8 e4m3 codes of values uniform in [lo, hi],
// each the nearest finite code (a "uniform" over u8 bytes would draw the NaN codes 0x7f and 0xff),
// seeded like every generated input; the e4m3 conversions it rests on (exact on every finite
// code, ties to even, saturating); and the parser's refusals: bounds past e4m3's range, a buffer
// that is not 8-bit (at parse time, or once "${...}" resolves to a wider type).
#include <QtTest>
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
    "key_fields": [{"name": "n"}, {"name": "t", "numeric": false, "default": "u8", "choices": ["u8", "f32"]}],
    "space": {"parameters": {"BLOCK": [64]}},
    "arguments": [
      {"name": "q", "buffer": "u8", "count": "n", "init": {"e4m3": [-448, 448]}},
      {"name": "small", "buffer": "i8", "count": "n", "init": {"e4m3": [-0.5, 0.5]}},
      {"name": "typed", "buffer": "${t}", "count": "n", "init": {"e4m3": [-1, 1]}},
      {"name": "out", "buffer": "f32", "count": "n", "role": "output"}
    ],
    "launches": [{"entry": "k", "grid": ["n"], "block": ["BLOCK"], "args": ["q", "small", "typed", "out"]}]
  })json");
}

KernelSpec spec(const nlohmann::json& j) {
  static const std::map<std::string, std::string> files{{"k.cu", "// the kernel\n"}};
  return KernelSpec::from_json(j, ".", cuda_spec_dialect(), "codes.json", &files);
}

Problem problem(long n, const std::string& t = "u8") {
  Problem p;
  p.family = "codes";
  p.fields = {{"n", std::to_string(n)}, {"t", t}};
  return p;
}

std::string parse_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = codes_spec();
  edit(j);
  return input_error_of([&] { spec(j); });
}

}  // namespace

class TestSpecE4m3Init : public QObject {
  Q_OBJECT
 private slots:
  void conversionsAreExactAndRoundToEven() {
    for (int c = 0; c < 256; ++c) {
      const float v = e4m3_to_f32(static_cast<std::uint8_t>(c));
      if ((c & 0x7f) == 0x7f) {
        QVERIFY(std::isnan(v));
        continue;
      }
      QCOMPARE(int(f32_to_e4m3(v)), c == 0x80 ? 0x80 : c);  // negative zero keeps its sign
    }
    QCOMPARE(e4m3_to_f32(0x7e), 448.0f);
    QCOMPARE(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
    QCOMPARE(int(f32_to_e4m3(1000.0f)), 0x7e);          // saturates, never NaN
    QCOMPARE(int(f32_to_e4m3(-1000.0f)), 0xfe);
    QCOMPARE(int(f32_to_e4m3(NAN)), 0x7f);
    QCOMPARE(int(f32_to_e4m3(1.0625f)), 0x38);  // halfway between 1 (even code) and 1.125
    QCOMPARE(int(f32_to_e4m3(1.1875f)), 0x3a);  // halfway between 1.125 and 1.25 (even code)
  }

  void codesAreFiniteSpanTheRangeAndFollowTheSeed() {
    const KernelSpec s = spec(codes_spec());
    const SpecInputs a = generate_spec_inputs(s, problem(20000), {}, 7);
    const auto& q = a.inputs.at("q").data;
    float lo = 0, hi = 0;
    for (const unsigned char c : q) {
      QVERIFY2((c & 0x7f) != 0x7f, "a NaN code");
      lo = std::min(lo, e4m3_to_f32(c));
      hi = std::max(hi, e4m3_to_f32(c));
    }
    QVERIFY(lo <= -400 && hi >= 400);
    for (const unsigned char c : a.inputs.at("small").data) QVERIFY(std::fabs(e4m3_to_f32(c)) <= 0.5f);
    QVERIFY(generate_spec_inputs(s, problem(20000), {}, 7).inputs.at("q").data == q);
    QVERIFY(generate_spec_inputs(s, problem(20000), {}, 8).inputs.at("q").data != q);
  }

  void parserRefusesWhatIsNotFiniteOrNot8Bit() {
    QVERIFY(parse_error([](auto& j) {
              j["arguments"][0]["init"]["e4m3"] = {-500, 448};
            }).find("-448 <= lo") != std::string::npos);
    QVERIFY(parse_error([](auto& j) {
              j["arguments"][0]["init"]["e4m3"] = {1, -1};
            }).find("lo <= hi") != std::string::npos);
    const std::string wide = parse_error([](auto& j) { j["arguments"][0]["buffer"] = "f16"; });
    QVERIFY2(wide.find("'q'") != std::string::npos && wide.find("\"u8\"") != std::string::npos, wide.c_str());
    // A "${...}" type is known per problem: a wide one fails there, naming the argument.
    const KernelSpec s = spec(codes_spec());
    const std::string late = input_error_of([&] { generate_spec_inputs(s, problem(8, "f32"), {}, 1); });
    QVERIFY2(late.find("'typed'") != std::string::npos && late.find("8-bit") != std::string::npos, late.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSpecE4m3Init)
#include "test_spec_e4m3_init.moc"
