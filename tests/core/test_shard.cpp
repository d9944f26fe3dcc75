// ShardSpec: the slice `--shard I/N` measures. The N slices of a space are disjoint and cover it,
// the hash is the documented FNV-1a-64 (a change would re-slice shard runs already on disk and
// break their resume and merge), sharded strategies slice the unsharded order, and RunSettings
// keep the shard so that resume and merge see it.
#include <QtTest>

#include <set>

#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/run_settings.h"
#include "ktune/shard.h"

using namespace ktune;

namespace {

std::vector<Config> space(int n) {
  std::vector<Config> out;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < 4; ++b) out.push_back(Config({{"MR", a}, {"NR", b}}));
  return out;
}

std::vector<Config> drain(Strategy& s) {
  std::vector<Config> out;
  for (auto batch = s.next(7); !batch.empty(); batch = s.next(7)) out.insert(out.end(), batch.begin(), batch.end());
  return out;
}

}  // namespace

class TestShard : public QObject {
  Q_OBJECT
 private slots:
  void slicesAreDisjointAndCoverTheSpace() {
    const auto all = space(25);
    for (std::uint32_t n : {1u, 2u, 3u, 7u}) {
      std::size_t covered = 0;
      for (const auto& c : all) {
        int owners = 0;
        for (std::uint32_t i = 0; i < n; ++i) owners += ShardSpec{i, n}.contains("M=16", c);
        QCOMPARE(owners, 1);
        covered += owners;
      }
      QCOMPARE(covered, all.size());
    }
    // Every shard of 3 gets a fair part of 100 configs (a hash, not a cut into ranges).
    for (std::uint32_t i = 0; i < 3; ++i) {
      int mine = 0;
      for (const auto& c : all) mine += ShardSpec{i, 3}.contains("M=16", c);
      QVERIFY2(mine > 15, qPrintable(QString("shard %1/3 has %2 of 100").arg(i).arg(mine)));
    }
  }

  void theHashIsFnv1a64OfProblemAndConfigKeys() {
    // FNV-1a-64("M=16,N=64,K=64,dtype=f32|MR=4,NR=8") = 12613702079960785248, computed apart (Python).
    const Config c({{"MR", 4}, {"NR", 8}});
    const std::uint32_t n = 1000003;
    QVERIFY((ShardSpec{68344, n}).contains("M=16,N=64,K=64,dtype=f32", c));
    QVERIFY(!(ShardSpec{68345, n}).contains("M=16,N=64,K=64,dtype=f32", c));
    QVERIFY((ShardSpec{648152, n}).contains("n=8", Config({{"x", 1}})));
  }

  void shardedStrategiesSliceTheUnshardedOrder() {
    for (const std::string kind : {"exhaustive", "random"}) {
      const StrategySpec spec{kind, 40, 5};
      auto whole = make_strategy(spec);
      whole->reset(space(25));
      const auto order = drain(*whole);
      std::vector<Config> joined;
      for (std::uint32_t i = 0; i < 3; ++i) {
        auto part = make_strategy(spec, ShardSpec{i, 3}, "M=16");
        part->reset(space(25));
        const auto mine = drain(*part);
        QCOMPARE(part->planned(), mine.size());
        for (const auto& c : mine) QVERIFY((ShardSpec{i, 3}).contains("M=16", c));
        joined.insert(joined.end(), mine.begin(), mine.end());
      }
      // The same configs as unsharded (random: the same sample of 40), each once.
      auto key_set = [](const std::vector<Config>& cs) {
        std::set<std::string> out;
        for (const auto& c : cs) out.insert(c.key());
        return out;
      };
      QCOMPARE(joined.size(), order.size());
      QVERIFY(key_set(joined) == key_set(order));
    }
    for (const char* guided : {"local", "genetic", "bayes"})
      QVERIFY_THROWS_EXCEPTION(InputError, make_strategy({guided, 8, 1}, ShardSpec{0, 2}, "M=16"));
    QVERIFY(make_strategy({"local", 8, 1}, ShardSpec{}, "M=16"));  // unsharded: as always
  }

  void parseNamesWhatIsWrong() {
    QCOMPARE(parse_shard("2/5"), (ShardSpec{2, 5}));
    QCOMPARE(parse_shard("0/1"), (ShardSpec{0, 1}));
    for (const char* bad : {"5/5", "0/0", "1", "a/b", "/3", "1/", "-1/3", "1/3/4", " 1/3"}) {
      try {
        parse_shard(bad);
        QFAIL(qPrintable(QString("accepted --shard '%1'").arg(bad)));
      } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("--shard"), e.what());
      }
    }
  }

  void runSettingsKeepTheShard() {
    RunSettings s;
    s.shard = {1, 4};
    const auto j = s.to_json();
    QCOMPARE(j.at("shard").at("index").get<int>(), 1);
    QCOMPARE(RunSettings::from_json(j).shard, (ShardSpec{1, 4}));
    RunSettings unsharded;
    QVERIFY(!unsharded.to_json().contains("shard"));  // runs written before --shard read the same
    QCOMPARE(RunSettings::from_json(unsharded.to_json()).shard, ShardSpec{});
    const auto diffs = differences(s, unsharded);
    QCOMPARE(diffs.size(), std::size_t(1));
    QCOMPARE(diffs.front().field, std::string("shard"));
    QCOMPARE(diffs.front().run_value, std::string("1/4"));
    auto broken = j;
    broken["shard"]["index"] = 4;
    QVERIFY_THROWS_EXCEPTION(InputError, RunSettings::from_json(broken));
  }
};

QTEST_GUILESS_MAIN(TestShard)
#include "test_shard.moc"
