// The workbench holds every run setting the core accepts: the Setup page's boxes take each
// option's whole range, so a session at the edges comes back unchanged (the settings without a
// box of their own too); it shows the core's message for settings the core refuses; and a run
// made at the edges opens like any other.
#include <QTemporaryDir>
#include <QtTest>
#include <limits>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/run_options.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/session.h"
#include "ktune/widgets/setup_page.h"

using namespace ktune;
using namespace ktune::gui;

namespace {

struct Quiet : TuneObserver {
  void on_event(const TuneEvent&) override {}
};

std::string settingsText(const RunSettings& s) {
  return nlohmann::json{
      {"strategy", to_json(s.strategy)}, {"measure", to_json(s.measure)}, {"tolerance", to_json(s.tolerance)}}
      .dump();
}

}  // namespace

class TestSettingsEdges : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<Backend>> backends_;
  QTemporaryDir tmp_;

  // The CPU gemm on one tiny shape and two configs, every setting at the largest value (or, where
  // the largest would make a run slow, the smallest) the core accepts. The seeds stay in the
  // range of the Setup page's boxes.
  Session largestSession(SetupPage& page, const QString& runName) {
    Session s = page.session();
    s.space = SearchSpace({{"MR", {6}, ""},
                           {"NR", {16}, ""},
                           {"vec", {8}, ""},
                           {"MC", {64}, ""},
                           {"KC", {128}, ""},
                           {"NC", {1024}, ""},
                           {"loop_order", {0, 1}, ""},
                           {"threads", {1}, ""}},
                          {});
    s.problems = expand_shape(page.currentFamily(), "M=16 N=64 K=64");
    s.strategy = {"random", 10'000'000, 2'147'483'647, 30 * 24 * 3600.0};
    s.measure.noise_target = 1;
    s.measure.min_samples = 1;
    s.measure.max_samples = 1'000'000;
    s.measure.warmup_ms = 0;
    s.measure.settle_ms = 0;
    s.measure.min_sample_ms = 0;
    s.measure.max_ms_per_config = 3.6e6;
    s.measure.slow_abort_margin = 1000;
    s.measure.remeasure_top = 1000;
    s.tolerance = {std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), 1};
    s.seed = 2'147'483'647;
    s.run_name = sstr(runName);
    s.output_dir = sstr(tmp_.path());
    return s;
  }

 private slots:
  void initTestCase() {
    initialize();
    backends_ = make_backends();
  }

  void setupPageKeepsEveryAcceptedValue() {
    SetupPage setup(backends_);
    Session s = largestSession(setup, QStringLiteral("kept"));
    setup.setSession(s);
    QCOMPARE(settingsText(setup.session()), settingsText(s));
    // And the smallest of each box's option.
    s.strategy.budget = 0;
    s.measure.noise_target = 1e-6;
    s.measure.max_samples = 1;
    s.measure.max_ms_per_config = 1;
    setup.setSession(s);
    QCOMPARE(settingsText(setup.session()), settingsText(s));
  }

  void setupPageShowsTheCoresMessage() {
    SetupPage setup(backends_);
    Session s = largestSession(setup, QStringLiteral("refused"));
    s.measure.min_samples = 10;
    s.measure.max_samples = 5;
    setup.setSession(s);
    try {
      setup.request();
      QFAIL("fewer samples at most than at least was accepted");
    } catch (const InputError& e) {
      QCOMPARE(QString(e.what()), "measure.max_samples: 5 is less than measure.min_samples (10); give at least 10");
    }
  }

  void runAtTheEdgesOpensInTheWorkbench() {
    SetupPage setup(backends_);
    const Session s = largestSession(setup, QStringLiteral("edges"));
    setup.setSession(s);
    const TuneRequest request = setup.request();
    Tuner tuner(*setup.currentBackend(), setup.currentDevice());
    Quiet quiet;
    tuner.run(request, quiet);
    const LoadedRun run = RunDocument::load(request.run_dir);
    QCOMPARE(run.trials.size(), std::size_t(2));
    QVERIFY(run.results.has_value());
    // Reopened as a session (File > Open run, then Resume or Tune again), the settings are the run's.
    setup.setSession(Session::from_run(run.metadata, request.run_dir));
    QCOMPARE(settingsText(setup.session()), settingsText(s));
  }
};

QTEST_MAIN(TestSettingsEdges)
#include "test_settings_edges.moc"
