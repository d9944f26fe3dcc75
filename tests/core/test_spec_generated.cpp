// Generated index data in a GPU kernel spec, checked without a GPU: "lengths" (ragged sequence
// lengths, one at the key's max) and "page_table" (rows of distinct pages of one pool of exactly
// the pages the lengths use, shuffled or in order), the variables they publish to later
// arguments (a KV cache sized by the pool), and the parser's refusals: wrong types, a table over
// an unknown, later or non-lengths argument, sizes that cannot hold, a published variable read
// before it exists or where the search space would depend on it.
#include <QtTest>
#include <algorithm>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "ktune/backends/cuda_spec.h"
#include "ktune/host_data.h"
#include "ktune/kernel_spec.h"
#include "ktune/spec_inputs.h"
#include "store_test_support.h"

using namespace ktune;

namespace {

// Shaped like the paged decode attention spec: lengths, a shuffled table over them, a KV cache of
// exactly the pages used, and the pool's size as a scalar.
nlohmann::json paged_spec() {
  return nlohmann::json::parse(R"json({
    "name": "paged", "source": "k.cu",
    "key_fields": [{"name": "num_sequences"}, {"name": "max_model_len"}, {"name": "num_kv_heads"},
                   {"name": "head_dim"}, {"name": "page_size"}, {"name": "ragged", "default": 1},
                   {"name": "dtype", "numeric": false, "default": "f16", "choices": ["f16", "bf16"]}],
    "space": {"parameters": {"BLOCK": [64, 128]}},
    "arguments": [
      {"name": "lengths", "buffer": "i32", "count": "num_sequences",
       "init": {"lengths": {"min": "ragged ? 1 : max_model_len", "max": "max_model_len"}}},
      {"name": "page_table", "buffer": "i32", "count": "num_sequences*ceil_div(max_model_len,page_size)",
       "init": {"page_table": {"lengths": "lengths", "page_size": "page_size", "shuffle": true}}},
      {"name": "K", "buffer": "${dtype}", "count": "page_table_pages*num_kv_heads*page_size*head_dim",
       "init": {"uniform": [-1, 1]}},
      {"name": "V", "buffer": "${dtype}", "count": "page_table_pages*num_kv_heads*page_size*head_dim",
       "init": {"uniform": [-1, 1]}},
      {"name": "out", "buffer": "f32", "count": "num_sequences*head_dim", "role": "output"},
      {"name": "num_pages", "scalar": "i32", "value": "page_table_pages"}
    ],
    "launches": [{"entry": "decode", "grid": ["num_sequences", "ceil_div(page_table_pages, 4)"], "block": ["BLOCK"],
                  "args": ["lengths", "page_table", "K", "V", "out", "num_pages"]}]
  })json");
}

KernelSpec spec(const nlohmann::json& j) {
  static const std::map<std::string, std::string> files{{"k.cu", "// the kernel\n"}};
  return KernelSpec::from_json(j, ".", cuda_spec_dialect(), "paged.json", &files);
}

std::string parse_error(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = paged_spec();
  edit(j);
  return input_error_of([&] { spec(j); });
}

Problem problem(long seqs, long len, long page = 16, int ragged = 1) {
  Problem p;
  p.family = "paged";
  p.fields = {{"num_sequences", std::to_string(seqs)},
              {"max_model_len", std::to_string(len)},
              {"num_kv_heads", "2"},
              {"head_dim", "8"},
              {"page_size", std::to_string(page)},
              {"ragged", std::to_string(ragged)},
              {"dtype", "f16"}};
  return p;
}

std::vector<std::int64_t> values(const HostInput& in) {
  std::vector<std::int64_t> out(in.data.size() / elem_size(in.type));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::int64_t>(load_elem(in.data.data(), in.type, i));
  return out;
}

long ceil_div(long a, long b) { return (a + b - 1) / b; }

// Every row's used entries distinct and, over all rows, exactly 0..P-1; the rest of each row 0.
void check_table(const std::vector<std::int64_t>& lengths, const std::vector<std::int64_t>& table, long page,
                 long pages) {
  const std::size_t cols = table.size() / lengths.size();
  std::vector<std::int64_t> used;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const long n = ceil_div(lengths[b], page);
    for (std::size_t i = 0; i < cols; ++i) {
      const std::int64_t e = table[b * cols + i];
      if (static_cast<long>(i) < n)
        used.push_back(e);
      else
        QCOMPARE(e, std::int64_t{0});
    }
  }
  QCOMPARE(static_cast<long>(used.size()), pages);
  std::sort(used.begin(), used.end());
  for (long i = 0; i < pages; ++i) QCOMPARE(used[i], std::int64_t{i});
}

}  // namespace

class TestSpecGenerated : public QObject {
  Q_OBJECT

 private slots:
  void lengthsAreInRangeWithOneAtMax() {
    const KernelSpec s = spec(paged_spec());
    const SpecInputs in = generate_spec_inputs(s, problem(64, 1000), {}, 7);
    const auto lengths = values(in.inputs.at("lengths"));
    QCOMPARE(lengths.size(), std::size_t{64});
    for (const auto l : lengths) QVERIFY2(l >= 1 && l <= 1000, std::to_string(l).c_str());
    QVERIFY(std::count(lengths.begin(), lengths.end(), 1000) >= 1);
    // Ragged, not all alike.
    QVERIFY(std::set<std::int64_t>(lengths.begin(), lengths.end()).size() > 10);
    std::int64_t total = 0;
    for (const auto l : lengths) total += l;
    QCOMPARE(in.variables.at("lengths_total"), static_cast<double>(total));
  }

  void sameSeedSameDataAnotherSeedOther() {
    const KernelSpec s = spec(paged_spec());
    const SpecInputs a = generate_spec_inputs(s, problem(64, 1000), {}, 7);
    const SpecInputs b = generate_spec_inputs(s, problem(64, 1000), {}, 7);
    const SpecInputs c = generate_spec_inputs(s, problem(64, 1000), {}, 8);
    for (const char* name : {"lengths", "page_table", "K"}) {
      QVERIFY(a.inputs.at(name).data == b.inputs.at(name).data);
      QVERIFY2(a.inputs.at(name).data != c.inputs.at(name).data, name);
    }
    // Pinned: the generator is integer arithmetic, the same on every machine and standard library.
    const auto lengths = values(a.inputs.at("lengths"));
    const std::vector<std::int64_t> first(lengths.begin(), lengths.begin() + 4);
    QCOMPARE(first, (std::vector<std::int64_t>{367, 945, 309, 915}));
    const auto table = values(a.inputs.at("page_table"));
    QCOMPARE(std::vector<std::int64_t>(table.begin(), table.begin() + 3), (std::vector<std::int64_t>{113, 846, 800}));
  }

  void notRaggedIsEveryLengthAtMax() {
    const KernelSpec s = spec(paged_spec());
    const SpecInputs in = generate_spec_inputs(s, problem(16, 300, 16, 0), {}, 7);
    for (const auto l : values(in.inputs.at("lengths"))) QCOMPARE(l, std::int64_t{300});
    QCOMPARE(in.variables.at("page_table_pages"), 16.0 * ceil_div(300, 16));
  }

  void pageTableRowsPageOnePoolShuffled() {
    const KernelSpec s = spec(paged_spec());
    const Problem p = problem(32, 2048);
    const SpecInputs in = generate_spec_inputs(s, p, {}, 3);
    const auto lengths = values(in.inputs.at("lengths"));
    const auto table = values(in.inputs.at("page_table"));
    QCOMPARE(table.size(), std::size_t{32 * 128});
    long pages = 0;
    for (const auto l : lengths) pages += ceil_div(l, 16);
    QCOMPARE(in.variables.at("page_table_pages"), static_cast<double>(pages));
    check_table(lengths, table, 16, pages);
    // Shuffled: the first row's pages are not 0, 1, 2, ...
    bool in_order = true;
    for (long i = 0; i < ceil_div(lengths[0], 16); ++i) in_order = in_order && table[i] == i;
    QVERIFY(!in_order);
    // The pool sizes the later buffers, a scalar and a launch grid.
    const std::uint64_t kv = static_cast<std::uint64_t>(pages) * 2 * 16 * 8;
    QCOMPARE(in.counts.at("K"), kv);
    QCOMPARE(in.inputs.at("V").data.size(), kv * 2);
    const Config c = s.family().default_config;
    QCOMPARE(Expression(s.argument("num_pages")->value).eval(s.variables(p, c, in.variables)),
             static_cast<double>(pages));
    QCOMPARE(s.geometry(s.launches()[0], p, c, in.variables).grid[1], static_cast<std::uint64_t>(ceil_div(pages, 4)));
    QCOMPARE(s.max_arg_count(*s.argument("K"), p, in.variables), kv);
  }

  void unshuffledTableIsInOrder() {
    nlohmann::json j = paged_spec();
    j["arguments"][1]["init"]["page_table"]["shuffle"] = false;
    const SpecInputs in = generate_spec_inputs(spec(j), problem(8, 100, 8), {}, 5);
    const auto lengths = values(in.inputs.at("lengths"));
    const auto table = values(in.inputs.at("page_table"));
    std::int64_t next = 0;
    for (std::size_t b = 0; b < lengths.size(); ++b)
      for (long i = 0; i < ceil_div(lengths[b], 8); ++i) QCOMPARE(table[b * 13 + i], next++);
    check_table(lengths, table, 8, next);
  }

  void i64LengthsAndUniformInputsAsBefore() {
    nlohmann::json j = paged_spec();
    j["arguments"][0]["buffer"] = "i64";
    const KernelSpec s = spec(j);
    const Problem p = problem(8, 64);
    const SpecInputs in = generate_spec_inputs(s, p, {}, 11);
    QVERIFY(in.inputs.at("lengths").type == ElemType::I64);
    for (const auto l : values(in.inputs.at("lengths"))) QVERIFY(l >= 1 && l <= 64);
    // Plain inputs keep the data sessions generated before: generate() seeded by key and name.
    const SpecArgument& k = *s.argument("K");
    QVERIFY(in.inputs.at("K").data == generate(ElemType::F16, in.counts.at("K"), k.init, 11 ^ fnv1a64(p.key() + "/K")));
    QVERIFY(!in.inputs.count("out"));
    QCOMPARE(in.counts.at("out"), std::uint64_t{64});
  }

  void boundsThatCannotHoldNameSpecArgumentAndValues() {
    nlohmann::json j = paged_spec();
    j["arguments"][0]["init"]["lengths"]["min"] = "max_model_len + 1";
    const std::string e = input_error_of([&] { generate_spec_inputs(spec(j), problem(4, 64), {}, 1); });
    QVERIFY2(contains(e, "paged.json: argument 'lengths'") && contains(e, "min 65") && contains(e, "max 64"),
             e.c_str());
    j["arguments"][0]["init"]["lengths"]["min"] = "ragged - 1";
    const std::string zero = input_error_of([&] { generate_spec_inputs(spec(j), problem(4, 64), {}, 1); });
    QVERIFY2(contains(zero, "min 0") && contains(zero, "1 <= min <= max"), zero.c_str());
  }

  void tableTooSmallOrNotAMultipleFails() {
    nlohmann::json j = paged_spec();
    j["arguments"][1]["count"] = "num_sequences*ceil_div(max_model_len,page_size) - num_sequences";
    const std::string small = input_error_of([&] { generate_spec_inputs(spec(j), problem(4, 64), {}, 1); });
    QVERIFY2(contains(small, "argument 'page_table'") && contains(small, "4 pages of 16 tokens") &&
                 contains(small, "holds 3"),
             small.c_str());
    j["arguments"][1]["count"] = "num_sequences*ceil_div(max_model_len,page_size) + 1";
    const std::string odd = input_error_of([&] { generate_spec_inputs(spec(j), problem(4, 64), {}, 1); });
    QVERIFY2(contains(odd, "count 17") && contains(odd, "not a multiple of 4"), odd.c_str());
  }

  void parserRefusesWhatCannotBeGenerated_data() {
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("expected");
    QTest::newRow("lengths on f16") << R"([{"op": "replace", "path": "/arguments/0/buffer", "value": "f16"}])"
                                    << "'f16': \"lengths\" generates i32 or i64";
    QTest::newRow("table on i64") << R"([{"op": "replace", "path": "/arguments/1/buffer", "value": "i64"}])"
                                  << "\"page_table\" generates i32";
    QTest::newRow("unknown lengths")
        << R"([{"op": "replace", "path": "/arguments/1/init/page_table/lengths", "value": "lens"}])"
        << "'lens' is not an argument declared before this one";
    QTest::newRow("later lengths") << R"([{"op": "move", "from": "/arguments/0", "path": "/arguments/1"}])"
                                   << "'lengths' is not an argument declared before this one";
    QTest::newRow("not lengths") << R"([{"op": "move", "from": "/arguments/2", "path": "/arguments/0"},
              {"op": "replace", "path": "/arguments/2/init/page_table/lengths", "value": "K"}])"
                                 << "'K' is not generated with \"init\": {\"lengths\"";
    QTest::newRow("not a multiple") << R"([{"op": "replace", "path": "/arguments/0/count", "value": "4"},
              {"op": "replace", "path": "/arguments/1/count", "value": "10"}])"
                                    << "count 10 is not a multiple of the 4 sequences";
    QTest::newRow("min > max") << R"([{"op": "replace", "path": "/arguments/0/init/lengths", "value":
                                       {"min": 8, "max": 4}}])"
                               << "min (8) exceeds max (4)";
    QTest::newRow("min 0") << R"([{"op": "replace", "path": "/arguments/0/init/lengths/min", "value": 0}])"
                           << "every length must be at least 1";
    QTest::newRow("misspelt key") << R"([{"op": "add", "path": "/arguments/1/init/page_table/shufle", "value": false}])"
                                  << "page_table.shufle: unknown key";
    QTest::newRow("a workspace") << R"([{"op": "add", "path": "/arguments/0/role", "value": "workspace"}])"
                                 << "generates an input buffer; 'lengths' is not one";
    QTest::newRow("read too early") << R"([{"op": "move", "from": "/arguments/2", "path": "/arguments/1"}])"
                                    << "arguments.K: 'page_table_pages' in \"page_table_pages*num_kv_heads*page_size*"
                                       "head_dim\" is published by argument 'page_table', which is not declared "
                                       "before this one";
    QTest::newRow("own total") << R"([{"op": "replace", "path": "/arguments/0/count", "value": "lengths_total"}])"
                               << "published by argument 'lengths', which is not declared before";
    QTest::newRow("in flops") << R"([{"op": "add", "path": "/flops", "value": "4*lengths_total"}])"
                              << "flops: 'lengths_total' in \"4*lengths_total\" is generated data";
    QTest::newRow("in a block") << R"([{"op": "replace", "path": "/launches/0/block/0", "value": "page_table_pages"}])"
                                << "launches[0].block: 'page_table_pages'";
    QTest::newRow("in a constraint")
        << R"([{"op": "add", "path": "/space/constraints", "value": ["BLOCK <= lengths_total"]}])"
        << "space.constraints: 'lengths_total' in \"BLOCK <= lengths_total\" is generated data";
    QTest::newRow("a name taken")
        << R"([{"op": "add", "path": "/key_fields/-", "value": {"name": "lengths_total"}}])"
        << "arguments.lengths: its generated data publishes 'lengths_total', which is already a key field";
  }
  void parserRefusesWhatCannotBeGenerated() {
    QFETCH(QString, edit);
    QFETCH(QString, expected);
    const nlohmann::json patch = nlohmann::json::parse(edit.toStdString());
    const std::string e = parse_error([&](nlohmann::json& j) { j = j.patch(patch); });
    QVERIFY2(contains(e, "paged.json: ") && contains(e, expected.toStdString()), e.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSpecGenerated)
#include "test_spec_generated.moc"
