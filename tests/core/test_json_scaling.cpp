// The JSON reader's work grows linearly with the members of an object (issue 20: through
// nlohmann's parser callback, which walked the parent object after every child, a registry of
// 16,000 entries took 3 s to load and one of 100,000 minutes). Counted, not timed: the parse runs
// on a JSON type whose objects count how often they are walked to their end.
#include <QtTest>
#include <map>
#include <string>

#include "../../core/src/json_limited.h"
#include "store_test_support.h"

using namespace ktune;

namespace {

std::size_t g_end_calls = 0;

// std::map, counting end(): each step of a walk over the object compares against it.
template <class K, class V, class... Rest>
struct CountingMap : std::map<K, V, Rest...> {
  using Base = std::map<K, V, Rest...>;
  using Base::Base;
  typename Base::iterator end() noexcept {
    ++g_end_calls;
    return Base::end();
  }
  typename Base::const_iterator end() const noexcept {
    ++g_end_calls;
    return Base::end();
  }
};

using CountingJson = nlohmann::basic_json<CountingMap>;

// {"k0": {"v": [0]}, "k1": {"v": [1]}, ...}: members that are containers, as registry entries are.
std::string object_of(int members) {
  std::string text = "{";
  for (int i = 0; i < members; ++i) {
    if (i) text += ',';
    text += "\"k" + std::to_string(i) + "\": {\"v\": [" + std::to_string(i) + "]}";
  }
  return text + "}";
}

std::size_t end_calls_parsing(int members) {
  const std::string text = object_of(members);
  g_end_calls = 0;
  const CountingJson j = detail::parse_limited<CountingJson>(text, "t");
  const std::size_t calls = g_end_calls;
  if (j.size() != static_cast<std::size_t>(members)) return static_cast<std::size_t>(-1);
  return calls;
}

}  // namespace

class TestJsonScaling : public QObject {
  Q_OBJECT

 private slots:
  void objectWorkIsLinearInItsMembers() {
    const std::size_t small = end_calls_parsing(1000), large = end_calls_parsing(4000);
    // Linear: a few walks' ends per member at most. The callback parser made ~n^2/2 (8 million
    // for 4000 members).
    QVERIFY2(large <= 4 * 4000, qPrintable(QString("%1 end() calls for 4000 members").arg(large)));
    QVERIFY2(large <= 4 * small + 64, qPrintable(QString("%1 for 1000 members, %2 for 4000").arg(small).arg(large)));
  }

  // Ordered objects are read through an index past a few members (a Kernel Tuner cache has one
  // per config): the order written and the last of duplicate keys, as nlohmann's parser keeps them.
  void orderedObjectsKeepOrderAndLastDuplicate() {
    std::string text = "{";
    for (int i = 0; i < 40; ++i) text += "\"k" + std::to_string((i * 7) % 25) + "\": " + std::to_string(i) + ",";
    text += "\"k0\": {\"x\": 1, \"x\": 2}}";
    const nlohmann::ordered_json mine = parse_ordered_json(text, "t"), theirs = nlohmann::ordered_json::parse(text);
    QCOMPARE(mine.dump(), theirs.dump());
    QCOMPARE(mine.size(), std::size_t(25));
    QCOMPARE(mine.begin().key(), std::string("k0"));
  }

  void depthLimitHoldsOnThisPathToo() {
    std::string deep(kMaxJsonDepth, '[');
    deep += std::string(kMaxJsonDepth, ']');
    QCOMPARE(detail::parse_limited<CountingJson>(deep, "t").size(), std::size_t(1));
    const std::string too_deep = "{\"a\":\n" + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "}";
    const std::string err = input_error_of([&] { detail::parse_limited<CountingJson>(too_deep, "t"); });
    QVERIFY2(contains(err, "nested deeper than 64 levels at line 2"), err.c_str());
  }

  // Brackets and quotes inside strings do not count towards the depth the error's line is found by.
  void depthErrorLineSkipsStrings() {
    const std::string text = "{\"[[[\\\"[[\": \"{{{\",\n\"b\":\n\n" + std::string(kMaxJsonDepth, '[') + "]";
    const std::string err = input_error_of([&] { parse_json(text, "t"); });
    QVERIFY2(contains(err, "at line 4"), err.c_str());
  }
};

QTEST_APPLESS_MAIN(TestJsonScaling)
#include "test_json_scaling.moc"
