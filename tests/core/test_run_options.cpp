// The run options' one declaration (run_options.h): every number read from JSON (a run's
// metadata, a session, a worker's measure request) is refused when it is not finite or out of its
// range, naming "<section>.<key>"; every value at an edge of a range is written and read back
// unchanged; and the tuner refuses settings no reader would accept, before anything is written.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <limits>

#include "axpy_backend.h"
#include "ktune/error.h"
#include "ktune/run_options.h"
#include "ktune/run_store.h"
#include "ktune/worker_protocol.h"

using namespace ktune;
using namespace ktune::test;
using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A section read by its reader, as a run's metadata, a session and a worker read it.
void readSection(const std::string& section, const json& j) {
  if (section == "measure") measure_settings_from_json(j);
  if (section == "tolerance") tolerance_from_json(j);
  if (section == "strategy") strategy_spec_from_json(j);
}

// Each number of a table at the edges of its range, written to JSON text and read back.
template <class S>
void roundTripEdges(std::span<const Option<S>> options, S (*read)(const json&, S), const char* section) {
  for (const auto& o : options)
    std::visit(
        [&](auto member) {
          using T = std::remove_cvref_t<decltype(S{}.*member)>;
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            const T top = std::isinf(o.range.max) ? std::numeric_limits<T>::max() : static_cast<T>(o.range.max);
            for (const T edge : {static_cast<T>(o.range.min), top}) {
              S s;
              s.*member = edge;
              if constexpr (std::is_same_v<S, MeasureSettings>) s.max_samples = std::max(s.max_samples, s.min_samples);
              const std::string text = to_json(s).dump();
              QVERIFY2(text.find("null") == std::string::npos, text.c_str());
              const S back = read(json::parse(text), S{});
              QVERIFY2(back.*member == s.*member, (std::string(section) + "." + o.key).c_str());
            }
          }
        },
        o.member);
}

}  // namespace

class TestRunOptions : public QObject {
  Q_OBJECT

  // `section.key` = value is refused by its reader, with an error that starts with its name.
  static void refusedNamingIt(const std::string& section, const std::string& key, const json& value) {
    const std::string name = section + "." + key;
    try {
      readSection(section, json{{key, value}});
      QFAIL(qPrintable("accepted: " + QString::fromStdString(name)));
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).starts_with(name + ": "), e.what());
    }
  }

 private slots:
  void jsonRefusesBadNumbers_data() {
    QTest::addColumn<QString>("section");
    QTest::addColumn<QString>("key");
    QTest::addColumn<double>("value");
    struct Bad {
      const char* section;
      const char* key;
      std::vector<double> values;  // out of range; NaN and the infinities are added
    };
    const Bad bad[] = {
        {"measure", "noise_target", {0, 1e-7, 1.5, -0.01}},
        {"measure", "warmup_ms", {-1, 3600001}},
        {"measure", "min_sample_ms", {-0.5, 3600001}},
        {"measure", "max_ms_per_config", {0, 0.5, -5, 3600001}},
        {"measure", "slow_abort_margin", {-0.1, 1001}},
        {"tolerance", "atol", {-1e-9}},
        {"tolerance", "rtol", {-1}},
        {"tolerance", "max_mismatch_fraction", {-0.1, 1.01}},
        {"strategy", "time_budget_s", {-1, 1e9}},
    };
    for (const Bad& b : bad) {
      std::vector<double> values = b.values;
      values.insert(values.end(), {kNaN, kInf, -kInf});
      for (const double v : values) QTest::addRow("%s.%s %g", b.section, b.key, v) << b.section << b.key << v;
    }
  }
  // A JSON document cannot hold NaN, but a json value built in memory can: both are checked.
  void jsonRefusesBadNumbers() {
    QFETCH(QString, section);
    QFETCH(QString, key);
    QFETCH(double, value);
    refusedNamingIt(section.toStdString(), key.toStdString(), value);
  }

  void jsonRefusesBadIntegers_data() {
    QTest::addColumn<QString>("section");
    QTest::addColumn<QString>("key");
    QTest::addColumn<qint64>("value");
    QTest::newRow("min_samples 0") << "measure"
                                   << "min_samples" << qint64(0);
    QTest::newRow("min_samples -1") << "measure"
                                    << "min_samples" << qint64(-1);
    QTest::newRow("min_samples wraps to 1") << "measure"
                                            << "min_samples" << qint64(4294967297);
    QTest::newRow("max_samples 0") << "measure"
                                   << "max_samples" << qint64(0);
    QTest::newRow("max_samples too many") << "measure"
                                          << "max_samples" << qint64(1000001);
    QTest::newRow("remeasure_top -1") << "measure"
                                      << "remeasure_top" << qint64(-1);
    QTest::newRow("remeasure_top 1001") << "measure"
                                        << "remeasure_top" << qint64(1001);
    QTest::newRow("budget -1") << "strategy"
                               << "budget" << qint64(-1);
    QTest::newRow("budget past any space") << "strategy"
                                           << "budget" << qint64(10000001);
    QTest::newRow("seed -1") << "strategy"
                             << "seed" << qint64(-1);
  }
  void jsonRefusesBadIntegers() {
    QFETCH(QString, section);
    QFETCH(QString, key);
    QFETCH(qint64, value);
    refusedNamingIt(section.toStdString(), key.toStdString(), value);
  }

  void samplesMustBeOrdered() {
    try {
      measure_settings_from_json(json{{"min_samples", 10}, {"max_samples", 5}});
      QFAIL("max_samples below min_samples was accepted");
    } catch (const InputError& e) {
      QCOMPARE(QString(e.what()), "measure.max_samples: 5 is less than measure.min_samples (10); give at least 10");
    }
    // A base whose max is below the file's min: the file's min is checked with the base's max.
    MeasureSettings base;
    base.max_samples = 7;
    QVERIFY_THROWS_EXCEPTION(InputError, measure_settings_from_json(json{{"min_samples", 8}}, base));
  }

  void messagesNameTheFlagOrTheKeyAndTheRange() {
    Tolerance t;
    t.atol = kNaN;
    try {
      validate(t, OptionNames::Cli);
      QFAIL("NaN atol accepted");
    } catch (const InputError& e) {
      QCOMPARE(QString(e.what()), "--atol: NaN is not a finite number; give a number >= 0");
    }
    MeasureSettings m;
    m.noise_target = 2;
    try {
      validate(m);
      QFAIL("noise_target 2 accepted");
    } catch (const InputError& e) {
      QCOMPARE(QString(e.what()), "measure.noise_target: 2 is out of range; give a number in [1e-06, 1]");
    }
    m = {};
    m.min_samples = 0;
    try {
      validate(m, OptionNames::Cli);
      QFAIL("min_samples 0 accepted");
    } catch (const InputError& e) {
      QCOMPARE(QString(e.what()), "--min-samples: 0 is out of range; give an integer in [1, 1000000]");
    }
    StrategySpec s;
    s.kind = "annealing";
    QVERIFY_THROWS_EXCEPTION(InputError, validate(s));
  }

  void defaultsAreValidAndEveryOptionHasAFlag() {
    validate(RunSettings{});
    validate(RunSettings{}, OptionNames::Cli);
    for_each_section([](const char* section, auto options, auto) {
      for (const auto& o : options) {
        QVERIFY2(QString(o.flag).startsWith("--"), o.key);
        QVERIFY2(std::string(o.doc).size() > 10, o.key);
        QVERIFY2(&find_option(options, o.key) == &o, section);
      }
    });
  }

  void edgesRoundTripThroughJsonText() {
    roundTripEdges(measure_options(), measure_settings_from_json, "measure");
    roundTripEdges(tolerance_options(), tolerance_from_json, "tolerance");
    roundTripEdges(strategy_options(), strategy_spec_from_json, "strategy");
  }

  // A worker measures with the settings it is sent: bad ones are a protocol error naming them.
  void workerRefusesBadSettings() {
    worker::Request r;
    r.type = "measure";
    r.id = 4;
    r.family = "gemm";
    r.problem = Problem::from_key("gemm", "M=16,N=32,K=32,dtype=f32");
    json m = worker::to_json(r);
    m["settings"]["min_samples"] = 0;
    try {
      worker::request_from_json(m);
      QFAIL("a measure request with min_samples 0 was accepted");
    } catch (const worker::ProtocolError& e) {
      QVERIFY2(QString(e.what()).contains("measure.min_samples: 0 is out of range"), e.what());
    }
    m = worker::to_json(r);
    m["tolerance"]["max_mismatch_fraction"] = 2;
    QVERIFY_THROWS_EXCEPTION(worker::ProtocolError, worker::request_from_json(m));
  }

  // Whatever front end built the request, the tuner writes no run whose settings ktune would refuse.
  void tunerRefusesBadSettingsBeforeWriting() {
    QTemporaryDir tmp;
    AxpyBackend b;
    Tuner tuner(b, b.devices()[0]);
    Recorder rec;
    auto req = request(b, "n=1000", b.family("axpy").default_space);
    req.run_dir = tmp.filePath("run").toStdString();
    req.tolerance.atol = kNaN;
    QVERIFY_THROWS_EXCEPTION(InputError, tuner.run(req, rec));
    req.tolerance = {};
    req.measure.min_samples = req.measure.max_samples = 0;
    QVERIFY_THROWS_EXCEPTION(InputError, tuner.run(req, rec));
    QVERIFY(!std::filesystem::exists(req.run_dir));
  }
};

QTEST_GUILESS_MAIN(TestRunOptions)
#include "test_run_options.moc"
