// The space language's string and boolean values, and explicit config lists: what a user writes
// in a space file, how constraints read it, how a kernel receives it, and the errors for bad ones.
#include <QtTest>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/search_space.h"

using namespace ktune;
using nlohmann::json;

namespace {

std::string error_of(const json& j) {
  try {
    SearchSpace::from_json(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Unsloth's rules: never both permutes; a TMA load of x cannot gather (permute_x).
const json kMoe = json::parse(
    "{ \"parameters\": {\"BLOCK\": [64, 128], \"permute_x\": [true, false], \"permute_y\": [true, false], "
    "\"use_tma_load_x\": [true, false], \"cache_modifier\": [\"\", \".cg\"]}, \"constraints\": [\"!(permute_x && "
    "permute_y)\", \"!(use_tma_load_x && permute_x)\", \"cache_modifier == '.cg' || BLOCK == 64\", \"cache_modifier != "
    "\\\".cg\\\" || BLOCK == 128\"] }");

}  // namespace

class TestSpaceValues : public QObject {
  Q_OBJECT
 private slots:
  void stringsAndBooleansInConstraints() {
    const SearchSpace s = SearchSpace::from_json(kMoe);
    QCOMPARE(s.find("permute_x")->kind(), ParamValue::Kind::Bool);
    QCOMPARE(s.find("cache_modifier")->kind(), ParamValue::Kind::String);
    QCOMPARE(s.total_size(), std::uint64_t(32));
    std::vector<std::pair<Config, std::string>> pruned;
    const auto valid = s.enumerate({}, &pruned);
    // By hand: 3 permute pairs allowed of 4, TMA x excludes permute_x, each modifier has one BLOCK.
    std::size_t expect = 0;
    for (bool px : {true, false})
      for (bool py : {true, false})
        for (bool tx : {true, false})
          if (!(px && py) && !(tx && px)) expect += 2;
    QCOMPARE(valid.size(), expect);
    for (const auto& c : valid) {
      QVERIFY(!(c.value("permute_x") == ParamValue(true) && c.value("permute_y") == ParamValue(true)));
      QCOMPARE(c.get("BLOCK"), c.value("cache_modifier") == ParamValue(".cg") ? 128 : 64);
    }
    QVERIFY(std::any_of(pruned.begin(), pruned.end(),
                        [](const auto& p) { return contains(p.second, "permute_x && permute_y"); }));
    // Keys and JSON show the values themselves.
    // (nlohmann::json sorts the parameters; a space file keeps the order written.)
    QCOMPARE(valid.front().key(),
             std::string("BLOCK=64,cache_modifier=\"\",permute_x=true,permute_y=false,use_tma_load_x=false"));
    QCOMPARE(valid.front().to_json()["permute_x"], json(true));
    QCOMPARE(valid.front().to_json()["cache_modifier"], json(""));
    // true / false read as constants too.
    const SearchSpace t({{"fused", {true, false}, ""}}, {{"fused == true", ""}});
    QCOMPARE(t.enumerate({}).size(), std::size_t(1));
  }

  void roundTripKeepsKinds() {
    const SearchSpace s = SearchSpace::from_json(kMoe);
    QCOMPARE(SearchSpace::from_json(s.to_json()), s);
    QCOMPARE(s.to_json()["parameters"][1]["values"], json({"", ".cg"}));
  }

  void kernelsGetDefines() {
    QCOMPARE(define_value(ParamValue(64)), std::string("64"));
    QCOMPARE(define_value(ParamValue(true)), std::string("1"));
    QCOMPARE(define_value(ParamValue(false)), std::string("0"));
    QCOMPARE(define_value(ParamValue(".cg")), std::string("\".cg\""));
    QCOMPARE(define_value(ParamValue("")), std::string("\"\""));
  }

  void badValuesAreNamed() {
    std::string e = error_of(json::parse("{\"parameters\": {\"x\": [true, 1]}}"));
    QVERIFY2(contains(e, "parameters.x[1]: expected a boolean, got 1"), e.c_str());
    e = error_of(json::parse("{\"parameters\": {\"x\": [\"a,b\"]}}"));
    QVERIFY2(contains(e, "'x'") && contains(e, "\"a,b\"") && contains(e, "','"), e.c_str());
    e = error_of(json::parse("{\"parameters\": {\"x\": [\"64\"]}}"));
    QVERIFY2(contains(e, "reads as a number or a boolean"), e.c_str());
    e = error_of(json::parse("{\"parameters\": {\"x\": [\"a\", \"a\"]}}"));
    QVERIFY2(contains(e, "lists a value twice"), e.c_str());
    e = error_of(json::parse("{\"parameters\": {\"x\": [1.5]}}"));
    QVERIFY2(contains(e, "parameters.x[0]"), e.c_str());
    e = error_of(json::parse("{\"parameters\": {\"x\": [\"a\"]}, \"constraints\": [\"x == 'a\"]}"));
    QVERIFY2(contains(e, "unterminated string"), e.c_str());
    // Integers where a size is needed: a string parameter says so.
    Config c;
    c.set("m", ".cg");
    QVERIFY_THROWS_EXCEPTION(InputError, c.get("m"));
  }

  void explicitListOfConfigs() {
    // TileLang's list of dicts: only these configs, constraints still apply.
    const json j = json::parse(
        "{ \"configs\": [{\"BM\": 64, \"BN\": 64, \"swap\": false}, {\"BM\": 128, \"BN\": 64, \"swap\": true}, "
        "{\"BM\": 256, \"BN\": 128, \"swap\": false}], \"constraints\": [\"BM <= M\"]}");
    const SearchSpace s = SearchSpace::from_json(j);
    QVERIFY(s.is_list());
    QCOMPARE(s.total_size(), std::uint64_t(3));
    QCOMPARE(s.parameters().size(), std::size_t(3));
    QCOMPARE(s.find("BM")->values, (std::vector<ParamValue>{64, 128, 256}));
    PruneReport r;
    const auto valid = s.enumerate({{"M", 128}}, nullptr, &r);
    QCOMPARE(r.total, std::uint64_t(3));
    QCOMPARE(valid.size(), std::size_t(2));
    QCOMPARE(valid[1].key(), std::string("BM=128,BN=64,swap=true"));
    QCOMPARE(SearchSpace::from_json(s.to_json()), s);

    // With "parameters" too: the configs' values must be candidates.
    json both = j;
    both["parameters"] = {{"BM", {64, 128, 256}}, {"BN", {64, 128}}, {"swap", {true, false}}};
    QCOMPARE(SearchSpace::from_json(both).enumerate({{"M", 1024}}).size(), std::size_t(3));
    both["parameters"]["BN"] = {64};
    QVERIFY2(contains(error_of(both), "config #3") && contains(error_of(both), "BN=128 is not one of"),
             error_of(both).c_str());
  }

  void badConfigListsNameTheConfig() {
    std::string e = error_of(json::parse("{\"configs\": [{\"BM\": 64, \"BN\": 64}, {\"BM\": 64, \"BX\": 1}]}"));
    QVERIFY2(contains(e, "config #2") && contains(e, "'BX'"), e.c_str());
    e = error_of(json::parse("{\"configs\": [{\"BM\": 64, \"BN\": 64}, {\"BM\": 128}]}"));
    QVERIFY2(contains(e, "config #2") && contains(e, "no value for parameter 'BN'"), e.c_str());
    e = error_of(json::parse("{\"configs\": [{\"BM\": 64}, {\"BM\": \"x\"}]}"));
    QVERIFY2(contains(e, "config #2") && contains(e, "takes integer values in the configs before it"), e.c_str());
    e = error_of(json::parse("{\"configs\": [{\"BM\": 64}, {\"BM\": 64}]}"));
    QVERIFY2(contains(e, "listed twice"), e.c_str());
    e = error_of(json::parse("{\"configs\": []}"));
    QVERIFY2(contains(e, "empty"), e.c_str());
    e = error_of(json::parse("{\"configs\": [{\"BM\": [1]}]}"));
    QVERIFY2(contains(e, "configs[0].BM"), e.c_str());
  }
};

QTEST_APPLESS_MAIN(TestSpaceValues)
#include "test_space_values.moc"
