// Mixture-of-experts routing, the workload of grouped GEMM: the core's generator (topk distinct
// experts a token, skewed so that a few experts are hot and some are empty, the same on every
// machine) and a kernel spec's "routing", "expert_offsets" and "expert_order" inputs generated
// from it, the variable a routing publishes, and the parser's and generator's refusals. A routing
// follows the workload seed and the counts alone: every pass of a shape shares it.
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda_spec.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/moe_routing.h"
#include "ktune/problem.h"
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

Problem problem(long experts, long tokens, long topk, long hidden = 8) {
  Problem p;
  p.family = "moe";
  p.fields = {{"experts", std::to_string(experts)},
              {"tokens", std::to_string(tokens)},
              {"topk", std::to_string(topk)},
              {"hidden", std::to_string(hidden)}};
  return p;
}

// The built-in CUDA grouped GEMM's spec (only its parser and input generator run here).
KernelSpec cuda_grouped_gemm() {
  return KernelSpec::load(std::filesystem::path(KTUNE_SOURCE_DIR) / "resources/kernels/cuda/grouped_gemm.json",
                          cuda_spec_dialect());
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
    // these counts and seed: the baseline scripts route exactly what a run routes.
    QCOMPARE(std::vector<std::int32_t>(r.expert.begin(), r.expert.begin() + 8),
             (std::vector<std::int32_t>{12, 9, 10, 7, 11, 12, 9, 2}));
    QCOMPARE(std::vector<std::int32_t>(offsets.begin(), offsets.begin() + 5),
             (std::vector<std::int32_t>{0, 21, 90, 121, 132}));
    // The same counts and seed, the same routing, whatever the other key fields; another seed, another.
    const auto route = [&](const Problem& p, std::uint64_t seed) {
      return generate_spec_inputs(s, p, {}, seed).inputs.at("route").data;
    };
    QVERIFY(route(problem(16, 300, 4), 5) == in.inputs.at("route").data);
    QVERIFY(route(problem(16, 300, 4, 64), 5) == in.inputs.at("route").data);
    QVERIFY(route(problem(16, 300, 4), 6) != in.inputs.at("route").data);
  }

  // A real MoE layer's forward and backward passes share one routing, so the spec's fwd, dX and dW
  // of a shape (and its other dtype, another hidden size, a tensor-parallel split) route alike: at
  // decode (8 experts, 16 tokens, top-2) and seed 1 a routing per key had fwd read 8 experts' weights
  // and dX 7.
  void everyPassOfAShapeSharesItsRouting() {
    const KernelSpec s = cuda_grouped_gemm();
    const auto route = [&](const std::string& shape, int tp_size = 1, TpSplitDim dim = TpSplitDim::None) {
      const std::vector<Problem> p = expand_shape(s.family(), shape, tp_size, dim);
      return values(generate_spec_inputs(s, p.at(0), {}, 7).inputs.at("route"));
    };
    const std::string decode = "experts=8 tokens=16 topk=2 intermediate=64 ";
    const auto fwd = route(decode + "hidden=32 dtype=bf16 pass=fwd");
    QCOMPARE(fwd, generate_moe_routing(8, 16, 2, moe_routing_seed(7, 8, 16, 2)).expert);
    QCOMPARE(route(decode + "hidden=32 dtype=bf16 pass=dX"), fwd);
    QCOMPARE(route(decode + "hidden=32 dtype=bf16 pass=dW"), fwd);
    QCOMPARE(route(decode + "hidden=64 dtype=f16 pass=dX"), fwd);
    QCOMPARE(route(decode + "hidden=32 dtype=bf16 pass=fwd", 2, TpSplitDim::Out), fwd);
    QCOMPARE(route(decode + "hidden=32 dtype=bf16 pass=dW", 2, TpSplitDim::In), fwd);
  }

  // The workload seed and each count enter the routing's seed: another of any is another routing.
  // Tokens must enter it even though more tokens only add draws: without it, 301 tokens would
  // begin with 300 tokens' routing.
  void routingFollowsTheSeedAndEachCount() {
    const auto expert = [](std::uint64_t seed, long experts, long tokens, long topk) {
      return generate_moe_routing(experts, tokens, topk, moe_routing_seed(seed, experts, tokens, topk)).expert;
    };
    const std::vector<std::int32_t> base = expert(5, 16, 300, 4);
    QCOMPARE(expert(5, 16, 300, 4), base);
    QVERIFY(expert(6, 16, 300, 4) != base);
    QVERIFY(expert(5, 17, 300, 4) != base);
    const std::vector<std::int32_t> more = expert(5, 16, 301, 4);
    QVERIFY(std::vector<std::int32_t>(more.begin(), more.begin() + 1200) != base);
    const std::vector<std::int32_t> fewer = expert(5, 16, 400, 3);
    QVERIFY(std::vector<std::int32_t>(fewer.begin(), fewer.begin() + 1200) != base);
    const std::uint64_t seed = moe_routing_seed(5, 16, 300, 4);
    for (const std::uint64_t other : {moe_routing_seed(6, 16, 300, 4), moe_routing_seed(5, 17, 300, 4),
                                      moe_routing_seed(5, 16, 301, 4), moe_routing_seed(5, 16, 300, 3)})
      QVERIFY(other != seed);
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
