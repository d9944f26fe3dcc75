// Statistics and the generic sampling loop: warm-up, noise target, time cap, slow abort.
#include <QtTest>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include <nlohmann/json.hpp>
#include "ktune/conditions.h"
#include "ktune/error.h"
#include "ktune/measurement.h"
#include "ktune/stats.h"
#include "ktune/strategy.h"

using namespace ktune;

class TestMeasurement : public QObject {
  Q_OBJECT
 private slots:
  void summarizeSamples() {
    const Stats s = summarize({5, 1, 3, 2, 4});
    QCOMPARE(s.count, std::size_t(5));
    QCOMPARE(s.median_ns, 3.0);
    QCOMPARE(s.mean_ns, 3.0);
    QCOMPARE(s.min_ns, 1.0);
    QCOMPARE(s.max_ns, 5.0);
    QVERIFY(qAbs(s.std_ns - std::sqrt(2.5)) < 1e-12);
    QCOMPARE(summarize({4, 2}).median_ns, 3.0);
    QCOMPARE(summarize({}).count, std::size_t(0));
  }

  void stopsAtNoiseTarget() {
    MeasureSettings m;
    m.warmup_ms = 0;
    m.min_samples = 5;
    m.max_samples = 50;
    int calls = 0;
    auto out = measure(
        m,
        [&](const SampleRequest&) {
          ++calls;
          return 1000.0;
        },
        std::nullopt);
    QCOMPARE(out.status, TrialStatus::Ok);
    QCOMPARE(out.samples_ns.size(), std::size_t(5));  // steady samples: stop at min_samples
    QCOMPARE(out.stats.median_ns, 1000.0);
  }

  void noisySamplesRunToMax() {
    MeasureSettings m;
    m.warmup_ms = 0;
    m.min_samples = 5;
    m.max_samples = 30;
    m.noise_target = 0.001;
    int i = 0;
    auto out = measure(
        m, [&](const SampleRequest&) { return (i++ % 2) ? 1000.0 : 2000.0; }, std::nullopt);
    QCOMPARE(out.samples_ns.size(), std::size_t(30));
    QCOMPARE(out.status, TrialStatus::Ok);
  }

  void amortizedCalibratesLaunchesPerSample() {
    MeasureSettings m;
    m.warmup_ms = 0;
    m.min_sample_ms = 1;
    std::vector<int> launches;
    measure(
        m,
        [&](const SampleRequest& r) {
          launches.push_back(r.launches);
          return 10000.0;
        },
        std::nullopt);
    QCOMPARE(launches.front(), 1);
    QCOMPARE(launches.back(), 100);  // 1 ms / 10 us
    m.method = Method::PerLaunch;
    launches.clear();
    measure(
        m,
        [&](const SampleRequest& r) {
          launches.push_back(r.launches);
          return 10000.0;
        },
        std::nullopt);
    QCOMPARE(launches.back(), 1);
  }

  void warmupRunsBeforeSamples() {
    MeasureSettings m;
    m.warmup_ms = 30;
    std::vector<std::chrono::steady_clock::time_point> calls;
    auto out = measure(
        m,
        [&](const SampleRequest&) {
          calls.push_back(std::chrono::steady_clock::now());
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          return 2e6;
        },
        std::nullopt);
    // The recorded samples are the last calls; before the first of them, at least 30 ms of
    // calls ran unrecorded (timestamps, not a call count: a loaded machine sleeps longer).
    const std::size_t unrecorded = calls.size() - out.samples_ns.size();
    QVERIFY(unrecorded >= 2);  // the calibration launch and at least one warm-up call
    QVERIFY(calls[unrecorded] - calls.front() >= std::chrono::milliseconds(30));
  }

  // A config measured after the device sat idle warms up settle_ms (at most half the time cap), so
  // that it is timed at the clocks a busy device holds; one measured straight after another does
  // not. Bounds are timestamps of calls, lower bounds but for one generous upper bound.
  void settlesAfterAnIdleDevice() {
    using std::chrono::milliseconds;
    std::vector<std::chrono::steady_clock::time_point> calls;
    const auto timed = [&](const SampleRequest&) {
      calls.push_back(std::chrono::steady_clock::now());
      std::this_thread::sleep_for(milliseconds(2));
      return 2e6;
    };
    const auto warmup = [&](const MeasureOutcome& out) {
      return calls[calls.size() - out.samples_ns.size()] - calls.front();
    };
    MeasureSettings m;
    m.warmup_ms = 0;
    m.settle_ms = 60;
    std::this_thread::sleep_for(milliseconds(150));  // idle
    auto out = measure(m, timed, std::nullopt);
    QCOMPARE(out.status, TrialStatus::Ok);
    QVERIFY(warmup(out) >= milliseconds(60));

    m.settle_ms = 20000;  // straight after: the warm-up is warmup_ms, nowhere near this
    m.max_ms_per_config = 60000;
    calls.clear();
    out = measure(m, timed, std::nullopt);
    QVERIFY(warmup(out) < milliseconds(10000));

    m.max_ms_per_config = 100;  // idle again: settle_ms, but at most half the cap, and the config is measured
    std::this_thread::sleep_for(milliseconds(150));
    calls.clear();
    out = measure(m, timed, std::nullopt);
    QCOMPARE(out.status, TrialStatus::Ok);
    QVERIFY(warmup(out) >= milliseconds(50));

    m.settle_ms = 0;  // off
    std::this_thread::sleep_for(milliseconds(150));
    calls.clear();
    out = measure(m, timed, std::nullopt);
    QVERIFY(warmup(out) < milliseconds(10000));
    QCOMPARE(calls.size() - out.samples_ns.size(), std::size_t(1));  // the calibration launch alone
  }

  void timeCapGivesTimeout() {
    MeasureSettings m;
    m.warmup_ms = 0;
    m.max_ms_per_config = 20;
    m.min_samples = 5;
    auto out = measure(
        m,
        [&](const SampleRequest& r) {
          std::this_thread::sleep_for(std::chrono::milliseconds(15));
          return std::chrono::duration<double, std::nano>(std::chrono::milliseconds(15)).count() / r.launches;
        },
        std::nullopt);
    QCOMPARE(out.status, TrialStatus::Timeout);
    QVERIFY(out.samples_ns.size() < 5);
    QVERIFY(QString::fromStdString(out.note).contains("cap"));
  }

  void deadlineIsPassedToTheBackend() {
    MeasureSettings m;
    m.warmup_ms = 0;
    m.max_ms_per_config = 50;
    const auto before = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point seen;
    measure(
        m,
        [&](const SampleRequest& r) {
          seen = r.deadline;
          return 1000.0;
        },
        std::nullopt);
    const double ms = std::chrono::duration<double, std::milli>(seen - before).count();
    QVERIFY(ms >= 49 && ms < 1000);
  }

  void slowConfigAbortsEarly() {
    MeasureSettings m;
    m.warmup_ms = 0;
    m.noise_target = 1e-9;
    m.max_samples = 50;
    int calls = 0;
    auto out = measure(
        m,
        [&](const SampleRequest&) {
          ++calls;
          return 3000.0 + (calls % 3);
        },
        1000.0);
    QCOMPARE(out.status, TrialStatus::SlowAbort);
    QCOMPARE(out.samples_ns.size(), std::size_t(3));
    m.slow_abort = false;
    out = measure(
        m,
        [&](const SampleRequest&) {
          ++calls;
          return 3000.0 + (calls % 3);
        },
        1000.0);
    QCOMPARE(out.status, TrialStatus::Ok);
    QCOMPARE(out.samples_ns.size(), std::size_t(50));
  }

  void failuresPropagate() {
    MeasureSettings m;
    QVERIFY_THROWS_EXCEPTION(
        TrialFailure,
        measure(
            m, [](const SampleRequest&) -> double { throw TrialFailure(TrialStatus::Crashed, "illegal address"); },
            std::nullopt));
  }

  // A backend's sample that is no time (zero, negative, NaN, infinite) is a crashed trial naming
  // the value, wherever it comes: the calibrating launch, a sample, or an alternating round.
  void samplesThatAreNoTimesCrash_data() {
    QTest::addColumn<double>("bad");
    QTest::addColumn<int>("at");  // the call that returns it
    QTest::addColumn<QString>("shown");
    QTest::newRow("zero, first launch") << 0.0 << 0 << QString("sample of 0 ns");
    QTest::newRow("negative sample") << -6.0 << 3 << QString("sample of -6 ns");
    QTest::newRow("NaN sample") << std::nan("") << 4 << QString("sample of nan ns");
    QTest::newRow("infinite sample") << std::numeric_limits<double>::infinity() << 2 << QString("sample of inf ns");
  }
  void samplesThatAreNoTimesCrash() {
    QFETCH(double, bad);
    QFETCH(int, at);
    QFETCH(QString, shown);
    MeasureSettings m;
    m.warmup_ms = 0;
    m.noise_target = 0;  // keep sampling until max_samples
    m.max_samples = 10;
    auto crash_of = [&](auto&& run) -> std::string {
      try {
        run();
      } catch (const TrialFailure& e) {
        return e.status() == TrialStatus::Crashed ? e.what() : "not crashed";
      }
      return "no failure";
    };
    auto sampler = [&] {
      return [&, calls = 0](const SampleRequest&) mutable { return calls++ == at ? bad : 1000.0; };
    };
    std::string why = crash_of([&] { measure(m, sampler(), std::nullopt); });
    QVERIFY2(QString::fromStdString(why).contains(shown), why.c_str());
    why = crash_of([&] { measure_alternating(m, {[](const SampleRequest&) { return 1000.0; }, sampler()}); });
    QVERIFY2(QString::fromStdString(why).contains(shown), why.c_str());
  }

  void settingsJsonRoundTripAndErrors() {
    MeasureSettings m;
    m.method = Method::PerLaunch;
    m.noise_target = 0.003;
    m.max_samples = 17;
    m.rotate_buffers = true;
    const MeasureSettings back = measure_settings_from_json(to_json(m));
    QCOMPARE(back.method, Method::PerLaunch);
    QCOMPARE(back.noise_target, 0.003);
    QCOMPARE(back.max_samples, 17);
    QCOMPARE(back.rotate_buffers, true);
    // Missing keys keep the base values (older files load); wrong types are named.
    QCOMPARE(measure_settings_from_json(nlohmann::json::object(), m).max_samples, 17);
    try {
      measure_settings_from_json(nlohmann::json{{"min_samples", "five"}});
      QFAIL("expected InputError");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("measure.min_samples: expected an integer"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InputError, measure_settings_from_json(nlohmann::json{{"method", "xprof"}}));
    QVERIFY_THROWS_EXCEPTION(InputError, tolerance_from_json(nlohmann::json{{"atol", true}}));
    const Tolerance t = tolerance_from_json(to_json(Tolerance{1e-4, 2e-4, 0.5}));
    QCOMPARE(t.rtol, 2e-4);
    QCOMPARE(t.max_mismatch_fraction, 0.5);
    const StrategySpec st = strategy_spec_from_json(to_json(StrategySpec{"local", 30, 9}));
    QCOMPARE(st.kind, std::string("local"));
    QCOMPARE(st.budget, std::size_t(30));
    QVERIFY_THROWS_EXCEPTION(InputError, strategy_spec_from_json(nlohmann::json{{"budget", -3}}));
  }

  void pairAlternatesSoBothSeeTheSameDrift() {
    // A GPU heating up: every sample of either kernel is slower than the one before. Measured one
    // after the other, the second kernel would look slower; alternated, both see the same clock.
    MeasureSettings m;
    m.warmup_ms = 0;
    m.min_samples = 10;
    m.max_samples = 10;
    double clock = 1.0;
    std::string order;
    auto kernel = [&](char name, double ns) {
      return [&, name, ns](const SampleRequest& r) {
        order += name;
        clock *= 1.01;
        return ns * clock / r.launches * r.launches;
      };
    };
    const auto [a, b] = measure_pair(m, kernel('a', 1000), kernel('b', 1000));
    QCOMPARE(a.samples_ns.size(), std::size_t(10));
    QCOMPARE(b.samples_ns.size(), std::size_t(10));
    QVERIFY(order.find("abababab") != std::string::npos);
    QVERIFY(qAbs(b.stats.median_ns / a.stats.median_ns - 1) < 0.011);  // one step of drift, not ten
    // A steady pair stops at min_samples; the slower one keeps its own timing.
    m.max_samples = 100;
    m.min_samples = 5;
    const auto [c, d] = measure_pair(
        m, [](const SampleRequest&) { return 500.0; }, [](const SampleRequest&) { return 750.0; });
    QCOMPARE(c.samples_ns.size(), std::size_t(5));
    QCOMPARE(d.stats.median_ns / c.stats.median_ns, 1.5);
    // A failing sample is the caller's to handle.
    QVERIFY_THROWS_EXCEPTION(
        TrialFailure, measure_pair(
                          m, [](const SampleRequest&) { return 1.0; },
                          [](const SampleRequest&) -> double { throw TrialFailure(TrialStatus::Crashed, "fault"); }));
  }

  // A measurement's conditions: medians of clock and power, the share of readings a limit held
  // down, no power where the board read none, nothing for no readings; and how a line says them.
  void conditionsOfReadings() {
    QVERIFY(summarize_conditions(std::vector<ConditionsReading>{}).empty());
    const Conditions c =
        summarize_conditions({{1400, 690, true}, {1980, 300, false}, {1425, 700, true}, {1500, 0, true}});
    QCOMPARE(c.at(kSmClockMhz), 1462.5);
    QCOMPARE(c.at(kPowerW), 690.0);
    QCOMPARE(c.at(kClockLimited), 0.75);
    QCOMPARE(describe(c), std::string("1462 MHz, 690 W, clock limited 75 % of the time"));
    const Conditions unpowered = summarize_conditions({{1980, 0, false}});
    QVERIFY(!unpowered.count(kPowerW));
    QCOMPARE(describe(unpowered), std::string("1980 MHz"));
    QCOMPARE(describe(summarize_conditions({{1410, 700, true}})), std::string("1410 MHz, 700 W, clock limited"));
    QCOMPARE(describe({}), std::string());

    std::map<std::string, double> metrics{{"speedup", 1.1}, {kSmClockMhz, 1980}, {kPowerW, 300}};
    replace_conditions(metrics, {{kSmClockMhz, 1425}});
    QCOMPARE(metrics, (std::map<std::string, double>{{"speedup", 1.1}, {kSmClockMhz, 1425}}));
    QCOMPARE(conditions_of(metrics), (Conditions{{kSmClockMhz, 1425}}));
  }

  void methodNames() {
    QCOMPARE(method_from_string("per_launch"), Method::PerLaunch);
    QCOMPARE(to_string(Method::Amortized), std::string("amortized"));
    QVERIFY_THROWS_EXCEPTION(InputError, method_from_string("xprof"));
    for (TrialStatus s : kAllTrialStatuses) QCOMPARE(trial_status_from_string(to_string(s)), s);
    QVERIFY_THROWS_EXCEPTION(InputError, trial_status_from_string("fine"));
  }
};

QTEST_APPLESS_MAIN(TestMeasurement)
#include "test_measurement.moc"
