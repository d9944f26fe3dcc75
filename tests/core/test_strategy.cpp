// Strategies: exhaustive covers everything once; random is seeded, honours its budget; the
// model-guided ones (local, genetic, bayes) are deterministic per seed, never propose a config
// twice, stay within budget, find the bottom of a smooth landscape and survive failing configs.
// Time budgets parse from the spellings --time-budget takes.
#include <QtTest>
#include <nlohmann/json.hpp>
#include <set>

#include "ktune/error.h"
#include "ktune/strategy.h"

using namespace ktune;

namespace {

std::vector<Config> configs(int n) {
  std::vector<Config> out;
  for (int i = 0; i < n; ++i) out.push_back(Config({{"x", i}}));
  return out;
}

std::vector<std::string> drain(Strategy& s, std::size_t batch) {
  std::vector<std::string> keys;
  for (auto b = s.next(batch); !b.empty(); b = s.next(batch))
    for (const auto& c : b) keys.push_back(c.key());
  return keys;
}

// 16 x 16 configs, latency grows with the distance from (11, 3); configs with x + y < 6 fail.
std::vector<Config> bowl() {
  std::vector<Config> grid;
  for (int x = 0; x < 16; ++x)
    for (int y = 0; y < 16; ++y) grid.push_back(Config({{"x", x}, {"y", y}}));
  return grid;
}

Trial bowl_trial(const Config& c) {
  Trial t;
  t.config = c;
  if (c.get("x") + c.get("y") < 6) {
    t.status = TrialStatus::CompileError;
    return t;
  }
  const double dx = double(c.get("x") - 11), dy = double(c.get("y") - 3);
  t.stats.median_ns = 1000 + 100 * (dx * dx + dy * dy);
  return t;
}

struct Drained {
  std::vector<std::string> keys;
  double best = 1e300;
};

// Runs a strategy against the bowl as the tuner does: batches of `batch`, each reported before
// the next is asked for.
Drained run_bowl(const StrategySpec& spec, std::size_t batch = 32) {
  auto s = make_strategy(spec);
  s->reset(bowl());
  Drained d;
  for (auto b = s->next(batch); !b.empty(); b = s->next(batch))
    for (const auto& c : b) {
      d.keys.push_back(c.key());
      const Trial t = bowl_trial(c);
      if (t.status == TrialStatus::Ok) d.best = std::min(d.best, t.stats.median_ns);
      s->report(t);
    }
  return d;
}

}  // namespace

class TestStrategy : public QObject {
  Q_OBJECT
 private slots:
  void exhaustiveInOrder() {
    auto s = make_strategy({"exhaustive", 0, 0});
    s->reset(configs(10));
    QCOMPARE(s->planned(), std::size_t(10));
    const auto keys = drain(*s, 3);
    QCOMPARE(keys.size(), std::size_t(10));
    QCOMPARE(keys.front(), std::string("x=0"));
    QCOMPARE(keys.back(), std::string("x=9"));
  }

  void randomIsSeededAndBudgeted() {
    auto a = make_strategy({"random", 4, 42});
    auto b = make_strategy({"random", 4, 42});
    auto c = make_strategy({"random", 4, 7});
    a->reset(configs(100));
    b->reset(configs(100));
    c->reset(configs(100));
    QCOMPARE(a->planned(), std::size_t(4));
    const auto ka = drain(*a, 16), kb = drain(*b, 16), kc = drain(*c, 16);
    QCOMPARE(ka, kb);
    QVERIFY(ka != kc);
    QCOMPARE(std::set<std::string>(ka.begin(), ka.end()).size(), std::size_t(4));
  }

  void randomWithoutBudgetTakesAll() {
    auto s = make_strategy({"random", 0, 1});
    s->reset(configs(20));
    const auto keys = drain(*s, 7);
    QCOMPARE(std::set<std::string>(keys.begin(), keys.end()).size(), std::size_t(20));
  }

  void localSearchFindsTheBottomOfABowlQuickly() {
    // 16 x 16 configs, latency grows with the distance from (11, 3): a smooth landscape.
    std::vector<Config> grid;
    for (int x = 0; x < 16; ++x)
      for (int y = 0; y < 16; ++y) grid.push_back(Config({{"x", x}, {"y", y}}));
    for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
      auto s = make_strategy({"local", 48, seed});
      s->reset(grid);
      QCOMPARE(s->planned(), std::size_t(48));
      std::set<std::string> seen;
      double best = 1e300;
      for (auto batch = s->next(16); !batch.empty(); batch = s->next(16))
        for (const auto& c : batch) {
          QVERIFY2(seen.insert(c.key()).second, "a config was proposed twice");
          Trial t;
          t.config = c;
          const double dx = double(c.get("x") - 11), dy = double(c.get("y") - 3);
          t.stats.median_ns = 1000 + 100 * (dx * dx + dy * dy);
          best = std::min(best, t.stats.median_ns);
          s->report(t);
        }
      QCOMPARE(seen.size(), std::size_t(48));
      QVERIFY2(best == 1000, qPrintable(QString("seed %1 ended at %2").arg(seed).arg(best)));
    }
  }

  void modelGuidedStrategiesAreSeededBudgetedAndFindTheBottom_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("budget");
    QTest::newRow("local") << "local" << 48;
    QTest::newRow("genetic") << "genetic" << 64;
    QTest::newRow("bayes") << "bayes" << 32;
  }
  void modelGuidedStrategiesAreSeededBudgetedAndFindTheBottom() {
    QFETCH(QString, kind);
    QFETCH(int, budget);
    const std::string k = kind.toStdString();
    int found = 0;
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      const Drained a = run_bowl({k, std::size_t(budget), seed});
      QCOMPARE(a.keys.size(), std::size_t(budget));
      QCOMPARE(std::set<std::string>(a.keys.begin(), a.keys.end()).size(), a.keys.size());  // never twice
      QCOMPARE(run_bowl({k, std::size_t(budget), seed}).keys, a.keys);                      // same seed, same path
      QVERIFY2(run_bowl({k, std::size_t(budget), seed + 100}).keys != a.keys, "another seed, another path");
      found += a.best == 1000;
    }
    // 256 configs, 1 best, a budget of an eighth to a quarter of them: random search would find it
    // in 1 of 5 to 1 of 8 seeds.
    QVERIFY2(found >= 4, qPrintable(QString("%1 found the best in %2 of 5 seeds").arg(kind).arg(found)));
  }

  void withoutBudgetEveryConfigOnce_data() {
    QTest::addColumn<QString>("kind");
    QTest::newRow("genetic") << "genetic";
    QTest::newRow("bayes") << "bayes";
  }
  void withoutBudgetEveryConfigOnce() {
    QFETCH(QString, kind);
    const Drained d = run_bowl({kind.toStdString(), 0, 3}, 7);
    QCOMPARE(d.keys.size(), std::size_t(256));
    QCOMPARE(std::set<std::string>(d.keys.begin(), d.keys.end()).size(), std::size_t(256));
  }

  // Every config fails: the strategies keep proposing untried configs to the end of the budget.
  void allFailingConfigsDoNotStopTheSearch_data() { withoutBudgetEveryConfigOnce_data(); }
  void allFailingConfigsDoNotStopTheSearch() {
    QFETCH(QString, kind);
    auto s = make_strategy({kind.toStdString(), 40, 1});
    s->reset(bowl());
    std::set<std::string> seen;
    for (auto b = s->next(32); !b.empty(); b = s->next(32))
      for (const auto& c : b) {
        QVERIFY(seen.insert(c.key()).second);
        Trial t;
        t.config = c;
        t.status = TrialStatus::LaunchError;
        s->report(t);
      }
    QCOMPARE(seen.size(), std::size_t(40));
  }

  void timeBudgetsParse() {
    QCOMPARE(parse_duration_s("60s"), 60.0);
    QCOMPARE(parse_duration_s("5m"), 300.0);
    QCOMPARE(parse_duration_s("1.5h"), 5400.0);
    QCOMPARE(parse_duration_s("90"), 90.0);
    QCOMPARE(parse_duration_s("0"), 0.0);
    for (const char* bad : {"", "abc", "5x", "s", "-5s", "inf", "nan", " 5s", "5 s", "1e999"}) {
      try {
        parse_duration_s(bad);
        QFAIL(qPrintable(QString("'%1' was accepted").arg(bad)));
      } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("time budget"), e.what());
      }
    }
    // The run's settings refuse a negative budget read back from a file.
    try {
      strategy_spec_from_json(nlohmann::json{{"time_budget_s", -1.0}});
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("strategy.time_budget_s"), e.what());
    }
  }

  void unknownStrategy() {
    try {
      make_strategy({"bayesian-magic", 0, 0});
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).contains("exhaustive"));
    }
  }
};

QTEST_APPLESS_MAIN(TestStrategy)
#include "test_strategy.moc"
