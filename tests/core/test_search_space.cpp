// SearchSpace: parsing, pruning counts, and the errors a user sees for bad spaces.
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/search_space.h"

using namespace ktune;

namespace {

SearchSpace tiles() {
  return SearchSpace({{"BM", {16, 32, 64, 128}, ""}, {"BK", {8, 16, 32}, ""}, {"stages", {1, 2, 3}, ""}},
                     {{"BM*BK*stages*4 <= smem", "tile fits in shared memory"}, {"BM <= M", ""}});
}

void write(const QString& path, const std::string& text) { std::ofstream(path.toStdString()) << text; }

}  // namespace

class TestSearchSpace : public QObject {
  Q_OBJECT
 private slots:
  void countsBeforeAndAfterPruning() {
    const SearchSpace s = tiles();
    QCOMPARE(s.total_size(), 36u);
    const PruneReport r = s.prune_report({{"smem", 4096}, {"M", 64}});
    QCOMPARE(r.total, 36u);
    // Count by hand: BM<=64 and BM*BK*stages<=1024.
    std::uint64_t expect = 0;
    for (int bm : {16, 32, 64, 128})
      for (int bk : {8, 16, 32})
        for (int st : {1, 2, 3})
          if (bm * bk * st * 4 <= 4096 && bm <= 64) ++expect;
    QCOMPARE(r.valid, expect);
    std::uint64_t pruned = 0;
    for (const auto& [expr, n] : r.pruned_by) pruned += n;
    QCOMPARE(pruned, r.total - r.valid);
  }

  void enumerateListsPrunedWithReason() {
    std::vector<std::pair<Config, std::string>> pruned;
    const auto valid = tiles().enumerate({{"smem", 4096}, {"M", 64}}, &pruned);
    QCOMPARE(valid.size() + pruned.size(), std::size_t(36));
    QVERIFY(!pruned.empty());
    QVERIFY(QString::fromStdString(pruned.front().second).contains("tile fits in shared memory") ||
            QString::fromStdString(pruned.front().second).contains("BM <= M"));
    for (const auto& c : valid) QVERIFY(c.get("BM") <= 64);
    // Odometer order: last parameter changes fastest.
    QCOMPARE(valid[0].get("stages"), ParamValue(1));
    QCOMPARE(valid[1].get("stages"), ParamValue(2));
  }

  void violatedNamesTheConstraint() {
    Config c({{"BM", 128}, {"BK", 32}, {"stages", 3}});
    auto why = tiles().violated(c, {{"smem", 4096}, {"M", 1024}});
    QVERIFY(why.has_value());
    QVERIFY(QString::fromStdString(*why).contains("shared memory"));
    Config ok({{"BM", 16}, {"BK", 8}, {"stages", 1}});
    QVERIFY(!tiles().violated(ok, {{"smem", 4096}, {"M", 1024}}).has_value());
  }

  void unknownVariableIsNamed() {
    SearchSpace s({{"BM", {16}, ""}}, {{"BM <= smem_bytes", ""}});
    const auto issues = s.check({{"smem", 1}});
    QCOMPARE(issues.size(), std::size_t(1));
    QVERIFY(QString::fromStdString(issues[0].message).contains("smem_bytes"));
    try {
      s.enumerate({{"smem", 1}});
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).contains("smem_bytes"));
      QVERIFY(QString(e.what()).contains("constraint #1"));
    }
  }

  void syntaxErrorIsMarked() {
    SearchSpace s({{"BM", {16}, ""}}, {{"BM <= 4", ""}, {"BM * (2", ""}});
    const auto issues = s.check({});
    QCOMPARE(issues.size(), std::size_t(1));
    QCOMPARE(issues[0].index, std::size_t(1));
    QVERIFY(QString::fromStdString(issues[0].message).contains("BM * (2"));
  }

  void helpersInExpressions() {
    SearchSpace s({{"B", {3, 4, 8, 12}, ""}}, {{"is_pow2(B) && ceil_div(100, B) >= 13", ""}});
    const auto valid = s.enumerate({});
    QCOMPARE(valid.size(), std::size_t(2));  // 4 -> 25, 8 -> 13
  }

  void jsonRoundTripKeepsOrder() {
    QTemporaryDir dir;
    const QString f = dir.filePath("space.json");
    write(f,
          R"({"parameters": {"zeta": [1, 2], "alpha": {"from": 16, "to": 128, "mul": 2}, "mid": {"from": 1, "to": 3}},
                 "constraints": ["zeta <= 2", {"expr": "alpha >= 16", "description": "min tile"}]})");
    const SearchSpace s = SearchSpace::load(f.toStdString());
    QCOMPARE(s.parameters().size(), std::size_t(3));
    QCOMPARE(s.parameters()[0].name, std::string("zeta"));  // file order, not alphabetical
    QCOMPARE(s.parameters()[1].values, (std::vector<ParamValue>{16, 32, 64, 128}));
    QCOMPARE(s.parameters()[2].values, (std::vector<ParamValue>{1, 2, 3}));
    QCOMPARE(s.constraints()[1].description, std::string("min tile"));
    const QString g = dir.filePath("again.json");
    s.save(g.toStdString());
    QVERIFY(SearchSpace::load(g.toStdString()) == s);
  }

  void malformedFilesNameTheProblem_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("needle");
    QTest::newRow("not json") << "{\"parameters\": [1,"
                              << "not valid JSON";
    QTest::newRow("no parameters") << "{\"constraints\": []}"
                                   << "\"parameters\"";
    QTest::newRow("float values") << "{\"parameters\": {\"BM\": [1.5]}}"
                                  << "BM";
    QTest::newRow("empty list") << "{\"parameters\": {\"BM\": []}}"
                                << "no candidate values";
    QTest::newRow("duplicate value") << "{\"parameters\": {\"BM\": [16, 16]}}"
                                     << "twice";
    QTest::newRow("bad constraint") << "{\"parameters\": {\"BM\": [16]}, \"constraints\": [\"BM <\"]}"
                                    << "constraint #1";
    QTest::newRow("constraint type") << "{\"parameters\": {\"BM\": [16]}, \"constraints\": [42]}"
                                     << "constraint";
  }
  void malformedFilesNameTheProblem() {
    QFETCH(QString, text);
    QFETCH(QString, needle);
    QTemporaryDir dir;
    const QString f = dir.filePath("bad.json");
    write(f, text.toStdString());
    try {
      SearchSpace::load(f.toStdString());
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("bad.json"), qPrintable(msg));
      QVERIFY2(msg.contains(needle), qPrintable(msg));
    }
  }

  void missingFile() { QVERIFY_THROWS_EXCEPTION(InputError, SearchSpace::load("/nonexistent/space.json")); }

  void duplicateParameterRejected() {
    QVERIFY_THROWS_EXCEPTION(InputError, SearchSpace({{"A", {1}, ""}, {"A", {2}, ""}}, {}));
  }
};

QTEST_APPLESS_MAIN(TestSearchSpace)
#include "test_search_space.moc"
