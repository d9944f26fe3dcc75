// ktune's own JSON reader (core/src/json_fast.h), which loads registries, reads what nlohmann's
// reads and refuses what it refuses, with the same values, duplicates, depth limit and messages:
// the cases where a hand-written reader most easily drifts (escapes, surrogates, UTF-8, numbers
// past 64 bits, what may follow the value). tests/fuzz/fuzz_json_readers compares the two on
// arbitrary bytes. Also save's writer, whose doubles must be nlohmann's bytes.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "../../core/src/json_limited.h"
#include "../fuzz/json_compare.h"
#include "ktune/files.h"
#include "ktune/registry.h"
#include "store_test_support.h"

using namespace ktune;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The value both readers give `text`, or nullopt when both refuse it (with the same message, in
// `error`); a disagreement fails the test.
std::optional<json> read_both(std::string_view text, std::string* error = nullptr) {
  std::optional<json> slow, fast;
  const std::string slow_error = input_error_of([&] { slow = detail::parse_limited<json>(text, "t.json"); });
  const std::string fast_error = input_error_of([&] { fast = detail::parse_limited_fast<json>(text, "t.json"); });
  if (slow.has_value() != fast.has_value() || slow_error != fast_error || (slow && !fuzz::identical(*slow, *fast)))
    throw std::runtime_error("the readers differ on " + std::string(text) + ": " + slow_error + " | " + fast_error);
  if (error) *error = slow_error;
  return slow;
}

bool refused(std::string_view text) { return !read_both(text).has_value(); }

std::string string_of(std::string_view text) { return read_both(text)->get<std::string>(); }

RegistryEntry entry(double median) {
  RegistryEntry e;
  e.config = Config({{"BM", 64}, {"wide", true}, {"cache", ".cg"}});
  e.latency_avg_ns = median;
  e.latency_median_ns = median;
  e.latency_std_ns = 0;
  e.compile_time_s = 0.25;
  e.benchmarking_method = "amortized";
  e.samples_ns = {median};
  e.run = "gemm_20261123_043000";
  e.tuned_at = "2026-11-23T04:30:00Z";
  e.ktune_version = "0.1.0";
  return e;
}

}  // namespace

class TestJsonFast : public QObject {
  Q_OBJECT

 private slots:
  void escapesAndUtf8() {
    QCOMPARE(string_of("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac\\u0000.\""),
             std::string("\"\\/\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\0.", 16));
    QCOMPARE(string_of("\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x7F\""),
             std::string("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x7F"));
    for (const char* bad : {"\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\x01\"", "\"\t\"", "\"open", "\"\\"})
      QVERIFY2(refused(bad), bad);
    // Overlong forms, UTF-16 surrogates, past U+10FFFF, stray and missing continuation bytes.
    for (const char* bad :
         {"\"\xC0\x80\"", "\"\xC1\xBF\"", "\"\xE0\x80\x80\"", "\"\xED\xA0\x80\"", "\"\xF0\x80\x80\x80\"",
          "\"\xF4\x90\x80\x80\"", "\"\xF5\x80\x80\x80\"", "\"\x80\"", "\"\xC3\"", "\"\xE2\x82\""})
      QVERIFY2(refused(bad), bad);
  }

  void surrogatePairs() {
    QCOMPARE(string_of("\"\\ud83d\\ude00\""), std::string("\xF0\x9F\x98\x80"));
    QCOMPARE(string_of("\"\\uDBFF\\uDFFF\""), std::string("\xF4\x8F\xBF\xBF"));
    for (const char* bad : {"\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"", "\"\\ud83d\\ud83d\"", "\"\\ud83dx\"",
                            "\"\\ud83d\\\"", "\"\\ud83d\\u\""})
      QVERIFY2(refused(bad), bad);
  }

  // nlohmann's kinds: positive integers unsigned, negative ones signed, a fraction or an
  // exponent a double, an integer past 64 bits a double, an overflowing double refused.
  void numbers() {
    const json v = *read_both(
        "[0, -0, -0.0, 1e3, 2.5E-3, 18446744073709551615, 18446744073709551616, -9223372036854775808,"
        " -9223372036854775809, 1e-400, 123456789012345678901234567890, 4.9e-324]");
    QVERIFY(v[0].is_number_unsigned() && v[0] == 0);
    QVERIFY(v[1].is_number_integer() && !v[1].is_number_unsigned() && v[1] == 0);
    QVERIFY(v[2].is_number_float() && std::signbit(v[2].get<double>()));
    QVERIFY(v[3].is_number_float() && v[3] == 1000.0);
    QVERIFY(v[5].is_number_unsigned() && v[5].get<std::uint64_t>() == UINT64_MAX);
    QVERIFY(v[6].is_number_float() && v[6] == 18446744073709551616.0);
    QVERIFY(v[7].is_number_integer() && v[7].get<std::int64_t>() == INT64_MIN);
    QVERIFY(v[8].is_number_float());
    QVERIFY(v[9].is_number_float() && v[9] == 0.0);
    QVERIFY(v[10].is_number_float() && v[10] == 1.2345678901234568e29);
    QVERIFY(v[11].get<double>() > 0);
    for (const char* bad :
         {"1e400", "-1e400", "01", "-01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10", "NaN", "-Infinity", "1.5e3x"})
      QVERIFY2(refused(bad), bad);
  }

  void duplicateKeysKeepTheLast() {
    QCOMPARE((*read_both("{\"a\": 1, \"b\": 2, \"a\": 3}"))["a"], json(3));
    Registry reg("cpu", "test-cpu");
    reg.set("gemm", "M=1", entry(100));
    std::string text = reg.to_json().dump();
    const std::string first = "\"M=1\":";
    text.insert(text.find(first), first + entry(50).to_json().dump() + ",");
    QCOMPARE(Registry::from_text(text, "t.json").find("gemm", "M=1")->latency_median_ns, 100.0);
    QCOMPARE(Registry::from_text(text, "t.json", true).find("gemm", "M=1")->latency_median_ns, 100.0);
  }

  // As nlohmann: whitespace may follow the value, and a NUL byte ends the text (its lexer reads
  // one as the end); anything else is refused. A UTF-8 byte order mark may open it.
  void whatMayFollowTheValue() {
    QVERIFY(read_both("{} \n\t\r").has_value());
    QVERIFY(read_both(std::string_view("{}\0junk", 7)).has_value());
    QVERIFY(read_both("\xEF\xBB\xBF{}").has_value());
    for (const char* bad : {"{} x", "{}{}", "[1]]", "[1,]", "{\"a\":1,}", "", "  ", "\xEF\xBB", "{}\xEF\xBB\xBF",
                            "[1 2]", "{\"a\" 1}", "{1:2}", "nul", "truex", "[true false]", "// c\n{}"})
      QVERIFY2(refused(bad), bad);
    QVERIFY(refused(std::string_view("[1,\0]", 5)));
  }

  void depthLimit() {
    QVERIFY(read_both(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']')).has_value());
    std::string error;
    QVERIFY(!read_both("\n\n" + std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'), &error));
    QVERIFY2(contains(error, "t.json: nested deeper than 64 levels at line 3"), error.c_str());
  }

  // A refused registry is named with the line of the fault and the key before it, through
  // either reader.
  void errorsNameTheFileAndLine() {
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "cpu" / "x.json";
    Registry reg("cpu", "x");
    reg.set("gemm", "M=1", entry(100));
    reg.save(file);
    std::string text = read_text_file(file);
    text.replace(text.find("\"amortized\""), 11, "\"amort\x01ized\"");
    write_file_atomic(file, text);
    const std::string error = input_error_of([&] { Registry::load(file); });
    QVERIFY2(contains(error, "registry " + file.string() + ": not valid JSON"), error.c_str());
    QVERIFY2(contains(error, "line 13") && contains(error, "after the key \"benchmarking_method\""), error.c_str());
    const std::string origin = "registry " + file.string();
    QCOMPARE(input_error_of([&] { Registry::from_text(text, origin); }),
             input_error_of([&] { Registry::from_text(text, origin, true); }));
  }

  // An entry read from the tokenizer's events (flat values) names the path of what it refuses
  // exactly as one read from nlohmann's values does, the path rendered only for the error.
  void entryErrorsNameTheirPathThroughEitherReader() {
    Registry reg("cpu", "x");
    reg.set("my-gemm", "M=1", entry(100));
    const json good = reg.to_json();
    const auto message = [&](const std::function<void(json&)>& edit) {
      json j = good;
      edit(j["entries"]["my-gemm"]["M=1"]);
      const std::string text = j.dump(1);
      const std::string fast = input_error_of([&] { Registry::from_text(text, "t.json"); });
      if (fast != input_error_of([&] { Registry::from_text(text, "t.json", true); }))
        throw std::runtime_error("the readers differ on " + text);
      return fast;
    };
    const std::string at = "entries[\"my-gemm\"][\"M=1\"].";
    QCOMPARE(message([](json& e) {
               e["metadata"]["samples_ns"] = {1.0, 2.0, "x"};
             }),
             at + "metadata.samples_ns[2]: expected a number, got \"x\"");
    QCOMPARE(message([](json& e) {
               e["metadata"]["versions"] = {{"compiler", 3}};
             }),
             at + "metadata.versions.compiler: expected a string, got 3");
    QCOMPARE(message([](json& e) { e["config"]["BM"] = json::array({1}); }),
             at + "config: config parameter 'BM' must be an integer, a boolean or a string, got [1]");
    QCOMPARE(message([](json& e) { e["stats"].erase("latency_std_ns"); }),
             at + "stats: missing field \"latency_std_ns\"");
    QCOMPARE(message([](json& e) { e = json::array(); }), "entries[\"my-gemm\"][\"M=1\"]: expected an object, got []");
    // Was nlohmann's "[json.exception.type_error.302] type must be string, but is number".
    QCOMPARE(message([](json& e) { e["metadata"]["chosen_by"] = 5; }),
             at + "metadata.chosen_by: expected a string, got 5");
  }

  // Inside an entry: the depth limit, and duplicate keys as nlohmann keeps them (the last, and
  // objects in key order).
  void entriesKeepTheDepthLimitAndNlohmannsMembers() {
    Registry reg("cpu", "x");
    reg.set("gemm", "M=1", entry(100));
    std::string text = reg.to_json().dump();
    const std::string deep = std::string(kMaxJsonDepth - 4, '[') + std::string(kMaxJsonDepth - 4, ']');
    text.insert(text.find("\"config\""), "\"extra\":" + deep + ",");
    QVERIFY(Registry::from_text(text, "t.json").find("gemm", "M=1"));
    text.insert(text.find("\"extra\":") + 8, "\n[");
    text.insert(text.find("]]"), "]");
    const std::string error = input_error_of([&] { Registry::from_text(text, "t.json"); });
    QVERIFY2(contains(error, "t.json: nested deeper than 64 levels at line 2"), error.c_str());

    text = reg.to_json().dump();
    text.insert(text.find("\"BM\":64") + 7, ",\"BM\":32,\"AA\":1");
    text.insert(text.find("\"benchmarking_method\""), "\"versions\":{\"zeta\":\"1\",\"alpha\":\"2\",\"zeta\":\"3\"},");
    const RegistryEntry fast = *Registry::from_text(text, "t.json").find("gemm", "M=1");
    const RegistryEntry slow = *Registry::from_text(text, "t.json", true).find("gemm", "M=1");
    QCOMPARE(fast.config.key(), slow.config.key());
    QCOMPARE(fast.config.key(), std::string("AA=1,BM=32,cache=.cg,wide=true"));
    QVERIFY(fast.versions == slow.versions);
    QVERIFY((fast.versions == std::vector<std::pair<std::string, std::string>>{{"alpha", "2"}, {"zeta", "3"}}));
  }

  // Doubles where std::to_chars's shortest digits are not nlohmann's (Grisu2), and the forms dump
  // switches between (fixed, exponent, "1.0", -0.0): save's text stays dump(2)'s.
  void saveWritesNlohmannsDoubles() {
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "cpu" / "x.json";
    Registry reg("cpu", "x");
    const double values[] = {2561371.5147485128,
                             21730.237433155082,
                             1943686.4130771451,
                             1.0,
                             100.0,
                             0.1,
                             1e15,
                             1e16,
                             1e21,
                             1e-5,
                             1.5e-7,
                             5e-324,
                             1.7976931348623157e308};
    int n = 0;
    for (const double v : values) {
      RegistryEntry e = entry(v);
      e.latency_std_ns = n % 2 ? -0.0 : 0.0;
      e.samples_ns = {v, -v, v / 3};
      e.versions = {{"zeta", "2"}, {"alpha", "\u00e9\t\"1\""}};
      reg.set("gemm", "M=" + std::to_string(++n), e);
    }
    reg.save(file);
    QCOMPARE(read_text_file(file), reg.to_json().dump(2) + "\n");
    const Registry back = Registry::load(file);
    QVERIFY(fuzz::identical(back.to_json(), Registry::from_text(read_text_file(file), "x", true).to_json()));
    QVERIFY(fuzz::identical(back.to_json(), reg.to_json()));
  }
};

QTEST_APPLESS_MAIN(TestJsonFast)
#include "test_json_fast.moc"
