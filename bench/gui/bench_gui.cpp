// bench_gui [--trials N] [--live-seconds S] [--shape SPEC]
// Prints, for a synthetic run of N trials (default 100000) written through the RunStore:
//   load     reading the folder off the UI thread and resetting the trials model
//   redraw   rebuilding the latency scatters (run order, against a parameter, and run order under
//            "x best") from the model and painting them with their noise bars, decimated (what
//            the workbench does) and, for reference, one QScatterSeries::replace() of every point;
//            and the Analyse page for one shape (fANOVA importance, a slice per parameter,
//            parallel coordinates of the best 20): computing it from the model and painting it
//   stall    the longest gap of a 5 ms UI-thread timer during a live CPU-backend run with every
//            page visible, i.e. the worst time the event loop was blocked
// Run it under QT_QPA_PLATFORM=offscreen or xvfb-run.
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QScatterSeries>
#include <QTemporaryDir>
#include <QTimer>
#include <QValueAxis>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>

#include "ktune/backends.h"
#include "ktune/widgets/analyse_page.h"
#include "ktune/widgets/importance_model.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/parallel_coordinates.h"
#include "ktune/widgets/parameter_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/run_page.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_page.h"
#include "ktune/widgets/tune_worker.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;

namespace {

double ms(const QElapsedTimer& t) { return static_cast<double>(t.nsecsElapsed()) / 1e6; }

// Runs the event loop (without spinning a core) until `flag` is set or the time is up.
bool waitFor(const bool& flag, int timeoutMs) {
  QEventLoop loop;
  QTimer poll;
  QObject::connect(&poll, &QTimer::timeout, &loop, [&] {
    if (flag) loop.quit();
  });
  QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
  poll.start(10);
  if (!flag) loop.exec();
  return flag;
}

// CPU time of the calling thread: what the UI thread itself spent, preemption excluded.
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Longest gap between ticks of a 5 ms timer over `seconds`, the event loop otherwise idle
// (apart from what is running already): the machine's own scheduling noise.
double probeStall(double seconds, std::vector<double>* gaps) {
  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  probe.setInterval(5);
  QElapsedTimer sinceTick;
  double worst = 0;
  QObject::connect(&probe, &QTimer::timeout, [&] {
    const double gap = ms(sinceTick);
    sinceTick.restart();
    gaps->push_back(gap);
    worst = std::max(worst, gap);
  });
  sinceTick.start();
  probe.start();
  bool done = false;
  QTimer::singleShot(static_cast<int>(seconds * 1000), [&] { done = true; });
  waitFor(done, static_cast<int>(seconds * 1000) + 1000);
  return worst;
}

struct Summary {
  double median, max;
};
Summary summarize_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  initialize();
  QCommandLineParser parser;
  const QCommandLineOption trialsOpt(QStringLiteral("trials"), QStringLiteral("Synthetic trials."), QStringLiteral("N"),
                                     QStringLiteral("100000"));
  const QCommandLineOption liveOpt(QStringLiteral("live-seconds"), QStringLiteral("Length of the live CPU run."),
                                   QStringLiteral("S"), QStringLiteral("15"));
  const QCommandLineOption shapeOpt(QStringLiteral("shape"), QStringLiteral("Shapes of the live gemm run."),
                                    QStringLiteral("SPEC"), QStringLiteral("M=1,2,4,8,16,32,64 N=128,256 K=128,256"));
  parser.addOptions({trialsOpt, liveOpt, shapeOpt});
  parser.addHelpOption();
  parser.process(app);
  const std::size_t n = parser.value(trialsOpt).toULongLong();

  QTemporaryDir tmp;
  const std::filesystem::path dir = std::filesystem::path(sstr(tmp.path())) / "bench_run";
  QElapsedTimer t;
  t.start();
  fixture::write_run(dir, n, 8);
  std::printf("wrote synthetic run: %zu trials, 8 shapes, %.0f ms\n", n, ms(t));

  // ---- load ----
  RunDocument document;
  LandscapePage landscape(document.trials());
  TrialsPage trialsPage(document.trials());
  RunPage runPage(document.trials());
  landscape.resize(1400, 900);
  trialsPage.resize(1400, 900);
  landscape.show();
  trialsPage.show();
  bool opened = false;
  QObject::connect(&document, &RunDocument::opened, [&] { opened = true; });
  t.restart();
  QElapsedTimer parse;
  parse.start();
  LoadedRun direct = RunDocument::load(dir);
  const double parseMs = ms(parse);
  QElapsedTimer reset;
  reset.start();
  document.trials()->setTrials({}, std::move(direct.trials));
  const double resetMs = ms(reset);
  t.restart();
  document.open(QString::fromStdString(dir.string()));
  if (!waitFor(opened, 120000)) {
    std::fprintf(stderr, "opening the run timed out\n");
    return 1;
  }
  const double openMs = ms(t);
  std::printf(
      "load: read+parse %.0f ms (worker thread), model reset %.1f ms (UI thread), open() end to end %.0f ms, %d rows\n",
      parseMs, resetMs, openMs, document.trials()->rowCount());

  // ---- redraw ----
  // Each scatter chart with its noise bars (on by default), the run-order chart also under
  // "× best" (log axis, bars and the line at 1). The first of the 7 redraws follows `change`
  // (switching the chart to what is timed, as the user's click does) and is reported on its own:
  // what a view does only once (an axis made, markers it never drew before) shows there.
  const auto redraw = [&](TrialChartView* chart, const char* what, const std::function<void()>& change) {
    std::vector<double> rebuild, paint, total;
    for (int i = 0; i < 7; ++i) {
      QElapsedTimer a;
      a.start();
      if (i == 0 && change) change();
      chart->refresh();
      const double r = ms(a);
      QElapsedTimer b;
      b.start();
      const QPixmap pm = chart->grab();
      const double p = ms(b);
      rebuild.push_back(r);
      paint.push_back(p);
      total.push_back(r + p);
    }
    QCoreApplication::processEvents();  // what the change left to the other charts, untimed
    const Summary sr = summarize_ms(rebuild), sp = summarize_ms(paint), st = summarize_ms(total);
    std::printf(
        "redraw %s (decimated, %d of %d points drawn, %zu noise bars): first %.1f ms (rebuild %.1f + paint %.1f); "
        "rebuild %.1f ms + paint %.1f ms = %.1f ms median, %.1f ms max (7 runs)\n",
        what, chart->drawnPoints(), chart->dataPoints(), chart->drawnSpreads().size(), total.front(), rebuild.front(),
        paint.front(), sr.median, sp.median, st.median, st.max);
  };
  QComboBox* yCombo = landscape.yMetricCombo();
  const auto chooseY = [&](const QString& name) { yCombo->setCurrentIndex(yCombo->findData(name)); };
  redraw(landscape.orderChart(), "run order, latency", {});
  redraw(landscape.parameterChart(), "against a parameter, latency", {});
  {
    // The user's switch as a whole: the y combo's handlers, both scatter charts rebuilt (log axis,
    // × best) and the page painted.
    QElapsedTimer a;
    a.start();
    chooseY(ChartMetric::vsBestName());
    landscape.orderChart()->refresh();
    landscape.parameterChart()->refresh();
    const QPixmap pm = landscape.grab();
    std::printf("switch the Landscape page to x best (both scatter charts rebuilt, the page painted): %.1f ms\n",
                ms(a));
    chooseY(QString());
    QCoreApplication::processEvents();
  }
  redraw(landscape.orderChart(), "run order, x best (log)", [&] { chooseY(ChartMetric::vsBestName()); });
  redraw(landscape.parameterChart(), "against a parameter, x best (log)", {});
  chooseY(QString());
  {
    // A fixed device with a compute peak and a memory roof, so both ceiling lines are built.
    DeviceInfo bench_device;
    bench_device.backend = "cpu";
    bench_device.name = "bench device";
    bench_device.properties = {{"peak_gflops_f32", 500.0}, {"mem_bandwidth_gbs", 40.0}};
    landscape.setDevice(bench_device);
    redraw(landscape.throughputChart(), "throughput against the ceilings", {});
  }

  {
    // The Analyse page of one shape (an eighth of the trials): what choosing a shape or a new
    // batch of trials costs, every chart computed again from the model and painted.
    AnalysePage analyse(document.trials());
    analyse.resize(1400, 900);
    analyse.show();
    std::vector<double> compute, paintAnalyse, both;
    for (int i = 0; i < 7; ++i) {
      QElapsedTimer a;
      a.start();
      analyse.refresh();
      const double c = ms(a);
      QElapsedTimer b;
      b.start();
      const QPixmap pm = analyse.grab();
      const double p = ms(b);
      compute.push_back(c);
      paintAnalyse.push_back(p);
      both.push_back(c + p);
    }
    const Summary sc = summarize_ms(compute), spa = summarize_ms(paintAnalyse), sb = summarize_ms(both);
    const ImportanceReport& report = analyse.importance()->report();
    std::printf(
        "redraw Analyse page (one shape: %zu ok trials, fANOVA over %zu configs, %lld slices, %lld lines): compute "
        "%.1f ms + paint %.1f ms = %.1f ms median, %.1f ms max (7 runs)\n",
        report.trials, report.learned, static_cast<long long>(analyse.slices().size()),
        static_cast<long long>(analyse.parallelCoordinates()->shownTrials().size()), sc.median, spa.median, sb.median,
        sb.max);
  }

  {
    // Reference: every point to one QScatterSeries in one replace() call.
    QList<QPointF> all;
    for (const Trial& tr : document.trials()->trials())
      if (tr.stats.count) all.append(QPointF(static_cast<double>(tr.id), tr.stats.median_ns / 1e3));
    auto* c = new QChart;
    auto* s = new QScatterSeries;
    s->setMarkerSize(7);
    c->addSeries(s);
    c->createDefaultAxes();
    QChartView view(c);
    view.resize(700, 450);
    view.show();
    std::vector<double> times;
    for (int i = 0; i < 3; ++i) {
      QElapsedTimer a;
      a.start();
      s->replace(all);
      c->axes(Qt::Horizontal).first()->setRange(0, static_cast<double>(n));
      c->axes(Qt::Vertical).first()->setRange(0, 1e4);
      const QPixmap pm = view.grab();
      times.push_back(ms(a));
      s->clear();
    }
    const Summary sf = summarize_ms(times);
    std::printf(
        "redraw reference (all %lld points, one replace(), no decimation): %.0f ms median, %.0f ms max (3 runs)\n",
        static_cast<long long>(all.size()), sf.median, sf.max);
  }

  // ---- live stall probe ----
  const double liveSeconds = parser.value(liveOpt).toDouble();
  if (liveSeconds <= 0) return 0;
  auto backends = make_backends();
  Backend& cpu = find_backend(backends, "cpu");
  const DeviceInfo device = cpu.devices().front();
  TuneRequest request;
  request.family = cpu.family("gemm");
  request.problems = expand_shape(request.family, sstr(parser.value(shapeOpt)));
  request.space = request.family.default_space;
  request.measure.min_samples = 3;
  request.measure.max_samples = 5;
  request.measure.warmup_ms = 1;
  request.measure.min_sample_ms = 0.2;
  request.measure.max_ms_per_config = 50;
  request.run_dir = std::filesystem::path(sstr(tmp.path())) / "live_run";
  document.beginLiveRun(request);
  landscape.setDevice(device);
  runPage.resize(1200, 800);
  runPage.show();
  RunController controller;
  // The append (model, proxy, table, run page) is timed, to tell its share of any stall.
  double worstAppend = 0;
  qsizetype worstBatch = 0, biggestBatch = 0;
  QObject::connect(&controller, &RunController::trialsAvailable, document.trials(), [&](const QList<Trial>& batch) {
    const double start = threadCpuMs();
    document.trials()->appendTrials(batch);
    const double took = threadCpuMs() - start;
    biggestBatch = std::max(biggestBatch, batch.size());
    if (took > worstAppend) worstAppend = took, worstBatch = batch.size();
  });
  QObject::connect(&controller, &RunController::progress, &runPage, &RunPage::onProgress);
  bool finished = false;
  QString failure;
  QObject::connect(&controller, &RunController::finished, [&] { finished = true; });
  QObject::connect(&controller, &RunController::failed, [&](const QString& message) {
    failure = message;
    finished = true;
  });

  std::vector<double> idleGaps;
  const double idleWorst = probeStall(3, &idleGaps);
  std::sort(idleGaps.begin(), idleGaps.end());
  std::printf("stall baseline (no run, same pages shown, 3 s): longest gap %.1f ms (p99 %.1f ms)\n", idleWorst,
              idleGaps[idleGaps.size() * 99 / 100]);

  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  probe.setInterval(5);
  QElapsedTimer sinceTick;
  double worst = 0;
  std::vector<double> gaps;
  QObject::connect(&probe, &QTimer::timeout, [&] {
    const double gap = ms(sinceTick);
    sinceTick.restart();
    gaps.push_back(gap);
    worst = std::max(worst, gap);
  });
  QElapsedTimer wall;
  wall.start();
  const double cpuBefore = threadCpuMs();
  controller.start(cpu, device, request);
  sinceTick.start();
  probe.start();
  QTimer::singleShot(static_cast<int>(liveSeconds * 1000), &controller, &RunController::stop);
  waitFor(finished, 3600 * 1000);
  probe.stop();
  const double uiCpu = threadCpuMs() - cpuBefore;
  if (!failure.isEmpty()) {
    std::fprintf(stderr, "live run failed: %s\n", qPrintable(failure));
    return 1;
  }
  std::sort(gaps.begin(), gaps.end());
  const double secs = static_cast<double>(wall.elapsed()) / 1e3;
  std::printf("live CPU run (%s, %s): %d trials in %.1f s (%.0f trials/s), %d UI updates (%.1f per s)\n",
              device.name.c_str(), qPrintable(parser.value(shapeOpt)), document.trials()->rowCount(), secs,
              document.trials()->rowCount() / secs, controller.updatesDelivered(),
              controller.updatesDelivered() / secs);
  std::printf("UI thread CPU during the run: %.0f ms of %.0f ms wall (%.0f %%)\n", uiCpu, secs * 1e3,
              100 * uiCpu / (secs * 1e3));
  std::printf(
      "append (model, proxy, table, run page): slowest batch %.1f ms UI-thread CPU (%lld trials), biggest batch %lld "
      "trials\n",
      worstAppend, static_cast<long long>(worstBatch), static_cast<long long>(biggestBatch));
  std::printf("stall: longest UI-thread gap of a 5 ms timer %.1f ms (p99 %.1f ms, median %.1f ms, %zu ticks)\n", worst,
              gaps[gaps.size() * 99 / 100], gaps[gaps.size() / 2], gaps.size());
  return 0;
}
