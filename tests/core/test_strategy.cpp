// Strategies: exhaustive covers everything once; random is seeded, honours its budget.
#include <QtTest>
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
