// Mixture-of-experts routing, the workload of grouped GEMM: the core's generator (topk distinct
// experts a token, skewed so that a few experts are hot and some are empty, the same on every
// machine) and a kernel spec's "routing", "expert_offsets" and "expert_order" inputs generated
// from it, the variable a routing publishes, and the parser's and generator's refusals.
#include <QtTest>
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda_spec.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/moe_routing.h"
#include "ktune/spec_inputs.h"
#include "store_test_support.h"

using namespace ktune;

namespace {

// Shaped like a grouped GEMM spec: the routing, its expert-order views, and a grid over the
// hottest expert's rows.
nlohmann::json moe_spec() {
  return nlohmann::json::parse(R"json({
    "name": "moe", "source": "k.cu",
    "key_fields": [{"name": "experts"}, {"name": "tokens"}, {"name": "topk"}, {"name": "hidden"}],
    "space": {"parameters": {"BM": [64, 128]}},
    "arguments": [
      {"name": "route", "buffer": "i32", "count": "tokens*topk",
       "init": {"routing": {"experts": "experts", "topk": "topk"}}},
      {"name": "offsets", "buffer": "i32", "count": "experts+1", "init": {"expert_offsets": "route"}},
      {"name": "rows", "buffer": "i32", "count": "tokens*topk",
       "init": {"expert_order": {"routing": "route", "index": "row"}}},
      {"name": "tokens_of", "buffer": "i32", "count": "tokens*topk",
       "init": {"expert_order": {"routing": "route", "index": "token"}}},
      {"name": "x", "buffer": "f32", "count": "tokens*hidden"},
      {"name": "y", "buffer": "f32", "count": "tokens*topk*hidden", "role": "output"},
      {"name": "busiest", "scalar": "i32", "value": "route_busiest"}
    ],
    "launches": [{"entry": "moe", "grid": ["ceil_div(route_busiest, BM)", "experts"], "block": ["128"],
                  "args": ["route", "offsets", "rows", "tokens_of", "x", "y", "busiest"]}]
  })json");
}

KernelSpec spec(const nlohmann::json& j) {
  static const std::map<std::string, std::string> files{{"k.cu", "// the kernel\n"}};
  return KernelSpec::from_json(j, ".", cuda_spec_dialect(), "moe.json", &files);
}

Problem problem(long experts, long tokens, long topk) {
  Problem p;
  p.family = "moe";
  p.fields = {{"experts", std::to_string(experts)},
              {"tokens", std::to_string(tokens)},
              {"topk", std::to_string(topk)},
              {"hidden", "8"}};
  return p;
}

std::vector<std::int32_t> values(const HostInput& in) {
  std::vector<std::int32_t> out(in.data.size() / sizeof(std::int32_t));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::int32_t>(load_elem(in.data.data(), in.type, i));
  return out;
}

// Every token's choices are distinct, and the expert-order arrays list each routed row once,
// grouped by expert, in routed-row order within an expert.
void check_routing(const MoeRouting& r) {
  QCOMPARE(static_cast<long>(r.expert.size()), r.rows());
  for (long t = 0; t < r.tokens; ++t) {
    std::set<std::int32_t> mine(r.expert.begin() + t * r.topk, r.expert.begin() + (t + 1) * r.topk);
    QCOMPARE(static_cast<long>(mine.size()), r.topk);
    for (const auto e : mine) QVERIFY(e >= 0 && e < r.experts);
  }
  QCOMPARE(r.offset.front(), 0L);
  QCOMPARE(r.offset.back(), r.rows());
  std::vector<int> seen(static_cast<std::size_t>(r.rows()), 0);
  for (long e = 0; e < r.experts; ++e)
    for (long s = r.offset[e]; s < r.offset[e + 1]; ++s) {
      QCOMPARE(static_cast<long>(r.expert[r.row[s]]), e);
      QCOMPARE(r.token[s], r.row[s] / static_cast<std::int32_t>(r.topk));
      if (s > r.offset[e]) QVERIFY(r.row[s] > r.row[s - 1]);
      ++seen[r.row[s]];
    }
  QVERIFY(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}

}  // namespace

class TestSpecRouting : public QObject {
  Q_OBJECT

 private slots:
  void routingIsSkewedDistinctAndWhole() {
    // Mixtral-like: 8 experts, top-2; DeepSeek-like: 64 experts, top-6; few tokens over many
    // experts leave some empty.
    const MoeRouting few = generate_moe_routing(8, 512, 2, 1);
    check_routing(few);
    const MoeRouting many = generate_moe_routing(64, 4096, 6, 2);
    check_routing(many);
    // Skewed: the hottest expert gets well over its even share (384 rows).
    QVERIFY2(many.busiest() > 2 * 4096 * 6 / 64, std::to_string(many.busiest()).c_str());
    const MoeRouting sparse = generate_moe_routing(256, 16, 2, 3);
    check_routing(sparse);
    long empty = 0;
    for (long e = 0; e < 256; ++e) empty += sparse.count(e) == 0;
    QVERIFY(empty > 200);
    // topk == experts: every token takes every expert.
    const MoeRouting all = generate_moe_routing(4, 9, 4, 4);
    check_routing(all);
    for (long e = 0; e < 4; ++e) QCOMPARE(all.count(e), 9L);
  }

  void sameSeedSameRoutingOnEveryHost() {
    QCOMPARE(generate_moe_routing(16, 100, 2, 9).expert, generate_moe_routing(16, 100, 2, 9).expert);
    QVERIFY(generate_moe_routing(16, 100, 2, 9).expert != generate_moe_routing(16, 100, 2, 10).expert);
    // Pinned: counter-based draws and sqrt weights, no std:: distribution, so the same values on
    // every machine and standard library.
    const MoeRouting r = generate_moe_routing(16, 100, 2, 9);
    QCOMPARE(std::vector<std::int32_t>(r.expert.begin(), r.expert.begin() + 8),
             (std::vector<std::int32_t>{10, 1, 7, 4, 1, 7, 1, 5}));
  }

  void badCountsNameTheProblem() {
    QVERIFY(contains(input_error_of([] { generate_moe_routing(2, 8, 3, 1); }),
                     "topk=3 exceeds experts=2: each token picks topk distinct experts"));
    QVERIFY(contains(input_error_of([] { generate_moe_routing(4, 0, 2, 1); }), "0 tokens"));
  }

  void specInputsViewOneRouting() {
    const KernelSpec s = spec(moe_spec());
    const SpecInputs in = generate_spec_inputs(s, problem(16, 300, 4), {}, 5);
    MoeRouting r;
    r.experts = 16, r.tokens = 300, r.topk = 4;
    r.expert = values(in.inputs.at("route"));
    sort_moe_routing(r);
    check_routing(r);
    const auto offsets = values(in.inputs.at("offsets"));
    QCOMPARE(offsets.size(), std::size_t{17});
    for (std::size_t e = 0; e < offsets.size(); ++e) QCOMPARE(static_cast<long>(offsets[e]), r.offset[e]);
    QCOMPARE(values(in.inputs.at("rows")), r.row);
    QCOMPARE(values(in.inputs.at("tokens_of")), r.token);
    QCOMPARE(in.variables.at("route_busiest"), static_cast<double>(r.busiest()));
    // Pinned, as bench/cuda/moe_routing.py (tests/python/test_moe_routing.py) computes them for
    // this key and seed: the baseline scripts route exactly what a run routes.
    QCOMPARE(std::vector<std::int32_t>(r.expert.begin(), r.expert.begin() + 8),
             (std::vector<std::int32_t>{3, 5, 6, 0, 10, 6, 3, 11}));
    QCOMPARE(std::vector<std::int32_t>(offsets.begin(), offsets.begin() + 5),
             (std::vector<std::int32_t>{0, 27, 39, 71, 359}));
    // Another problem, another routing; the same problem and seed, the same one.
    QVERIFY(generate_spec_inputs(s, problem(16, 300, 4), {}, 5).inputs.at("route").data == in.inputs.at("route").data);
    QVERIFY(generate_spec_inputs(s, problem(16, 300, 4), {}, 6).inputs.at("route").data != in.inputs.at("route").data);
  }

  void generationRefusesWhatCannotHold() {
    const KernelSpec s = spec(moe_spec());
    QVERIFY(contains(input_error_of([&] { generate_spec_inputs(s, problem(2, 8, 3), {}, 1); }),
                     "moe.json: argument 'route' for "));
    nlohmann::json j = moe_spec();
    j["arguments"][0]["count"] = "tokens*topk+1";
    const std::string odd = input_error_of([&] { generate_spec_inputs(spec(j), problem(4, 8, 2), {}, 1); });
    QVERIFY2(contains(odd, "count 17") && contains(odd, "not a multiple of topk 2"), odd.c_str());
    j = moe_spec();
    j["arguments"][1]["count"] = "experts";
    const std::string offsets = input_error_of([&] { generate_spec_inputs(spec(j), problem(4, 8, 2), {}, 1); });
    QVERIFY2(contains(offsets, "argument 'offsets': count 4") && contains(offsets, "has 5 offsets (experts + 1)"),
             offsets.c_str());
  }

  void parserRefusesWhatCannotBeGenerated_data() {
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("expected");
    QTest::newRow("routing on i64") << R"([{"op": "replace", "path": "/arguments/0/buffer", "value": "i64"}])"
                                    << "'i64': \"routing\" generates i32";
    QTest::newRow("order on f32") << R"([{"op": "replace", "path": "/arguments/2/buffer", "value": "f32"}])"
                                  << "\"expert_order\" generates i32";
    QTest::newRow("no topk") << R"([{"op": "remove", "path": "/arguments/0/init/routing/topk"}])"
                             << "missing \"topk\"";
    QTest::newRow("topk > experts") << R"([{"op": "replace", "path": "/arguments/0/init/routing", "value":
                                          {"experts": 2, "topk": 3}}])"
                                    << "topk (3) exceeds experts (2)";
    QTest::newRow("misspelt key") << R"([{"op": "add", "path": "/arguments/0/init/routing/skew", "value": 1}])"
                                  << "routing.skew: unknown key";
    QTest::newRow("unknown routing")
        << R"([{"op": "replace", "path": "/arguments/1/init/expert_offsets", "value": "r"}])"
        << "'r' is not an argument declared before this one";
    QTest::newRow("not a routing")
        << R"([{"op": "replace", "path": "/arguments/2/init/expert_order/routing", "value": "offsets"}])"
        << "'offsets' is not generated with \"init\": {\"routing\"";
    QTest::newRow("bad index")
        << R"([{"op": "replace", "path": "/arguments/3/init/expert_order/index", "value": "col"}])"
        << "'col': expected \"row\" (routed-row indices) or \"token\"";
    QTest::newRow("an output") << R"([{"op": "add", "path": "/arguments/1/role", "value": "workspace"}])"
                               << "generates an input buffer; 'offsets' is not one";
    QTest::newRow("busiest in a block")
        << R"([{"op": "replace", "path": "/launches/0/block/0", "value": "route_busiest"}])"
        << "launches[0].block: 'route_busiest'";
  }
  void parserRefusesWhatCannotBeGenerated() {
    QFETCH(QString, edit);
    QFETCH(QString, expected);
    const nlohmann::json patch = nlohmann::json::parse(edit.toStdString());
    const std::string e = input_error_of([&] { spec(moe_spec().patch(patch)); });
    QVERIFY2(contains(e, "moe.json: ") && contains(e, expected.toStdString()), e.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSpecRouting)
#include "test_spec_routing.moc"
